package ingest

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/loggen"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

var t0r = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newPipeline(tb testing.TB) (*Pipeline, *storage.Store) {
	tb.Helper()
	store, err := storage.Open(storage.Config{Path: filepath.Join(tb.TempDir(), "db")}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	format, err := parser.New("combined")
	if err != nil {
		tb.Fatal(err)
	}
	classifier, err := classify.New(classify.DefaultConfig(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	return mustNew(tb, Config{Anchor: AnchorLog}, Deps{
		Format: format, Classifier: classifier, Window: window.New(window.Config{Length: 10 * time.Minute}, t0r), Store: store,
	}), store
}

// chunks cuts n generated lines (every 50th bad) into chunks of about size
// bytes, alternating between two files.
func chunks(n, size int) []tailer.Chunk {
	g := loggen.New(loggen.Config{Seed: 1, Start: t0r, Step: 100 * time.Millisecond, BadEvery: 50})
	var out []tailer.Chunk
	var buf []byte
	off := map[string]int64{}
	for i := 0; i < n; i++ {
		buf = g.Line(buf)
		if len(buf) >= size || i == n-1 {
			file := []string{"a", "b"}[len(out)%2]
			off[file] += int64(len(buf))
			out = append(out, tailer.Chunk{File: file, Data: buf, Offset: off[file]})
			buf = nil
		}
	}
	return out
}

func feed(cs []tailer.Chunk) <-chan tailer.Chunk {
	in := make(chan tailer.Chunk, 8)
	go func() {
		for _, c := range cs {
			in <- c
		}
		close(in)
	}()
	return in
}

// TestReplayMatchesRun: parsing on every core gives the counts and
// positions of the one-goroutine loop.
func TestReplayMatchesRun(t *testing.T) {
	cs := chunks(20_000, 4096)
	run, runStore := newPipeline(t)
	if err := run.Run(context.Background(), feed(cs)); err != nil {
		t.Fatal(err)
	}
	replay, replayStore := newPipeline(t)
	if err := replay.Replay(context.Background(), feed(cs)); err != nil {
		t.Fatal(err)
	}
	if run.Lines() != 20_000 || replay.Lines() != run.Lines() || replay.Parsed() != run.Parsed() || replay.Rejected() != run.Rejected() {
		t.Errorf("replay counted %d/%d/%d, run %d/%d/%d (lines/parsed/rejected)",
			replay.Lines(), replay.Parsed(), replay.Rejected(), run.Lines(), run.Parsed(), run.Rejected())
	}
	for _, file := range []string{"a", "b"} {
		got, _, _ := replayStore.Position(file)
		want, _, _ := runStore.Position(file)
		if got != want || want == 0 {
			t.Errorf("position of %s: replay %d, run %d", file, got, want)
		}
	}
	all := func(s *storage.Store) []logtally.Bucket {
		m, err := s.Minutes(t0r.Add(-time.Hour), t0r.Add(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := all(runStore), all(replayStore)
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("replay stored %d minutes, run %d", len(b), len(a))
	}
	for i := range a {
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			t.Errorf("minute %d: replay %+v, run %+v", i, b[i], a[i])
		}
	}
}

func TestLongLineRejected(t *testing.T) {
	p, _ := newPipeline(t)
	p.cfg.MaxLine = 100
	data := append(bytes.Repeat([]byte("x"), 200), '\n')
	p.parse(tailer.Chunk{File: "a", Data: data, Offset: 201, Skipped: 2}, &p.sc, &p.res)
	p.apply(&p.res)
	if got := p.RejectedBy()[tailer.ErrLongLine.Error()]; got != 3 || p.Lines() != 3 {
		t.Errorf("rejected as too long = %d of %d lines, want 3 of 3", got, p.Lines())
	}
}

// BenchmarkParse is the per-core part of replay: lines to hits.
func BenchmarkParse(b *testing.B) {
	p, _ := newPipeline(b)
	cs := chunks(50_000, tailer.ChunkSize)
	var size int64
	for _, c := range cs {
		size += int64(len(c.Data))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cs {
			p.parse(c, &p.sc, &p.res)
		}
	}
	b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkApply is the serial part of ingest: hits into the windows and
// the batches (window, as run does), or into the batches alone (replay,
// which keeps no window). The commits are left out: see BenchmarkCommit.
func BenchmarkApply(b *testing.B) {
	for _, tt := range []struct {
		name     string
		noWindow bool
	}{{"window", false}, {"replay", true}} {
		b.Run(tt.name, func(b *testing.B) {
			p, _ := newPipeline(b)
			p.cfg.NoWindow = tt.noWindow
			rs := parsed(p)
			b.ReportAllocs()
			for range b.N {
				for i := range rs {
					p.apply(&rs[i])
				}
				b.StopTimer()
				if err := p.commit(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkApplySharded is Replay's apply step with shards, per line of
// the input: the coordinator's part (sites, lines, rejected lines,
// positions), which stays serial, and one shard's part with n shards,
// which runs on n cores at once (every shard scans every hit, and adds
// its share).
func BenchmarkApplySharded(b *testing.B) {
	b.Run("coordinator", func(b *testing.B) {
		p, _ := newPipeline(b)
		p.cfg.NoWindow = true
		rs := parsed(p)
		b.ReportAllocs()
		for range b.N {
			for i := range rs {
				p.resolve(&rs[i])
			}
			b.StopTimer()
			if err := p.commit(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/50_000, "ns/line")
	})
	for _, n := range []int{1, 2, 4, 16} {
		b.Run(fmt.Sprintf("shard-of-%d", n), func(b *testing.B) {
			p, _ := newPipeline(b)
			p.cfg.NoWindow = true
			rs := parsed(p)
			var parts shardParts
			b.ReportAllocs()
			for range b.N {
				for i := range rs {
					p.applyShard(&parts, 0, n, &rs[i], p.list)
				}
				b.StopTimer()
				for _, bt := range parts.sites {
					bt.Reset()
				}
				b.StartTimer()
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/50_000, "ns/line")
		})
	}
}

// BenchmarkCommit is replay's other serial step: committing the batches
// of 50,000 lines (one site), which Replay does on a goroutine of its own.
func BenchmarkCommit(b *testing.B) {
	p, _ := newPipeline(b)
	p.cfg.NoWindow = true
	rs := parsed(p)
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		for i := range rs {
			p.apply(&rs[i])
		}
		b.StartTimer()
		if err := p.commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// parsed returns 50,000 lines in chunks, parsed.
func parsed(p *Pipeline) []result {
	cs := chunks(50_000, tailer.ChunkSize)
	rs := make([]result, len(cs))
	for i, c := range cs {
		p.parse(c, &p.sc, &rs[i])
	}
	return rs
}
