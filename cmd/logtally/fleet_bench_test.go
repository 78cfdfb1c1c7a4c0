package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
)

// BenchmarkStatsRead measures what a page header's poll of /api/v1/stats
// costs, over loopback HTTP with keep-alive, from a daemon that follows a
// log written at about 1,000 lines a second: without --fleet (the node's
// own window) and with --fleet (the fleet's View, read every second from a
// local PostgreSQL while the node ships each commit there). It reports the
// median and the 99th percentile of the latency.
func BenchmarkStatsRead(b *testing.B) {
	for _, mode := range []string{"node", "fleet"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			log := filepath.Join(dir, "access.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				b.Fatal(err)
			}
			args := []string{"run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", "--dashboard=false"}
			if mode == "fleet" {
				args = append(args, "--fleet", pgtest.Database(b), "--visitor-secret-file", secretFile(b), "--node", "bench")
			}
			m := startBench(b, append(args, log)...)
			ctx, stop := context.WithCancel(context.Background())
			written := make(chan struct{})
			go func() {
				defer close(written)
				w := &lineWriter{rng: rand.New(rand.NewPCG(1, 2))}
				for ctx.Err() == nil {
					f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
					if err == nil {
						f.Write(w.lines(10))
						f.Close()
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			defer func() { stop(); <-written }()
			url := "http://" + m.Addr() + "/api/v1/stats"
			client := &http.Client{Timeout: 5 * time.Second}
			read := func() (int, time.Duration) {
				began := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode, time.Since(began)
			}
			poll.Until(b, "the fleet's first view", func() bool { code, _ := read(); return code == http.StatusOK })
			var latencies []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				_, d := read()
				latencies = append(latencies, d)
			}
			slices.Sort(latencies)
			b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// startBench runs a Main with args as start does, for a benchmark.
func startBench(b *testing.B, args ...string) *Main {
	b.Helper()
	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, io.Discard
	if err := m.ParseFlags(args); err != nil {
		b.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}
