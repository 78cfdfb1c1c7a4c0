package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/loggen"
)

// BenchmarkReplay replays a generated 2,000,000-line combined log into a
// new database, end to end through Main, as `logtally replay` does. The
// target on a 2-core machine is 1,500,000 lines/s; bench/replay.sh runs it.
func BenchmarkReplay(b *testing.B) {
	const lines = 2_000_000
	dir := b.TempDir()
	log := filepath.Join(dir, "access.log")
	size := writeLog(b, log, lines)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		replayOnce(b, lines, "--db", filepath.Join(dir, fmt.Sprintf("db%d", i)), log)
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// replayOnce runs `logtally replay args...` through Main and fails b
// unless it read lines lines.
func replayOnce(b *testing.B, lines int, args ...string) {
	b.Helper()
	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, io.Discard
	if err := m.ParseFlags(append([]string{"replay"}, args...)); err != nil {
		b.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	if got := m.pipeline().Lines(); got != int64(lines) {
		b.Fatalf("read %d lines, want %d", got, lines)
	}
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
}

// writeLog writes n generated combined lines to path and returns its size.
func writeLog(tb testing.TB, path string, n int) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	g := loggen.New(loggen.Config{Seed: 1, Start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), Step: 100 * time.Millisecond, Hosts: 5000, Paths: 200})
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	for range n {
		buf = g.Line(buf[:0])
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkReplaySites replays 500,000 lines of 100 sites, as
// vhost_combined with --site-field %v: every line counted in its site and
// in the all-sites view. bench/sites runs the binary the same way.
func BenchmarkReplaySites(b *testing.B) {
	const lines = 500_000
	dir := b.TempDir()
	log := filepath.Join(dir, "access.log")
	f, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	g := loggen.New(loggen.Config{Seed: 1, Start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), Step: 100 * time.Millisecond, Hosts: 5000, Paths: 200})
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	for i := range lines {
		buf = fmt.Appendf(buf[:0], "site%d.example:80 ", i%100)
		buf = g.Line(buf)
		w.Write(buf)
	}
	w.Flush()
	f.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := NewMain()
		m.Stdout, m.Stderr = io.Discard, io.Discard
		if err := m.ParseFlags([]string{"replay", "--db", filepath.Join(dir, fmt.Sprintf("db%d", i)),
			"--format", "vhost_combined", "--site-field", "%v", log}); err != nil {
			b.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
