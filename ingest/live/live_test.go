package live

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/ingest/replay"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
	"github.com/logtally/logtally/window"
)

var t0 = ingesttest.T0

// newLoop returns a loop of one site over the combined format, into store,
// with a window of ten minutes ending at now, on a clock stopped at now;
// with AnchorLog, where the window follows the lines, on the wall clock,
// after the lines were written (lines ahead of the clock are rejected).
func newLoop(tb testing.TB, cfg Config, store ingest.Committer, now time.Time) *Loop {
	tb.Helper()
	format, classifier := ingesttest.Combined(tb)
	clock := func() time.Time { return now }
	if cfg.Anchor == AnchorLog {
		clock = time.Now
	}
	return mustNew(tb, cfg, Deps{Deps: ingest.Deps{Format: format, Classifier: classifier, Now: clock}, Store: store,
		Window: window.New(window.Config{Length: 10 * time.Minute}, now)})
}

// mustNew returns New's loop, failing tb if there is none.
func mustNew(tb testing.TB, cfg Config, deps Deps) *Loop {
	tb.Helper()
	l, err := New(cfg, deps)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// run runs l over cs to their end.
func run(tb testing.TB, l *Loop, cs ...tailer.Chunk) {
	tb.Helper()
	if err := l.Run(context.Background(), ingesttest.Feed(cs...)); err != nil {
		tb.Fatal(err)
	}
}

// replayLines replays cs into store, as `logtally replay` does: its clock
// is the wall clock, after the lines were written.
func replayLines(tb testing.TB, store ingest.Committer, cs ...tailer.Chunk) {
	tb.Helper()
	format, classifier := ingesttest.Combined(tb)
	r, err := replay.New(replay.Config{}, replay.Deps{Deps: ingest.Deps{Format: format, Classifier: classifier}, Store: store})
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Replay(context.Background(), ingesttest.Feed(cs...)); err != nil {
		tb.Fatal(err)
	}
}

// flakyStore fails every commit while failing is set, as a full or
// read-only disk would.
type flakyStore struct {
	*storage.Store
	failing  atomic.Bool
	attempts atomic.Int64
}

var errDiskFull = errors.New("no space left on device")

func (f *flakyStore) Commit(bs ...*tally.Batch) error {
	f.attempts.Add(1)
	if f.failing.Load() {
		return errDiskFull
	}
	return f.Store.Commit(bs...)
}

func TestWriteFailurePausesAndLosesNothing(t *testing.T) {
	s := ingesttest.Store(t)
	store := &flakyStore{Store: s}
	now := t0.Add(5 * time.Minute) // after every line the test writes
	cfg := DefaultConfig()
	cfg.Ingest.FlushLines, cfg.Ingest.FlushInterval = 50, time.Millisecond
	l := newLoop(t, cfg, store, now)

	in := make(chan tailer.Chunk)
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background(), in) }()

	first := ingesttest.Chunk(0, 0, 100)
	in <- first
	poll.Until(t, "the first chunk committed", func() bool { return l.Commits() > 0 })

	store.failing.Store(true)
	second := ingesttest.Chunk(first.Offset, 100, 100)
	in <- second
	poll.Until(t, "the failure to show", func() bool { return l.Err() != nil })
	if !errors.Is(l.Err(), errDiskFull) {
		t.Fatalf("Err = %v, want the store's error", l.Err())
	}
	third := ingesttest.Chunk(second.Offset, 200, 100)
	sent := make(chan struct{})
	go func() { in <- third; close(sent) }()
	before := store.attempts.Load()
	poll.Until(t, "several retries", func() bool { return store.attempts.Load() >= before+5 })
	select {
	case <-sent:
		t.Fatal("a chunk was taken while commits were failing")
	default:
	}

	store.failing.Store(false)
	<-sent
	close(in)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l.Err() != nil {
		t.Errorf("Err = %v after recovery", l.Err())
	}
	minutes, _ := s.Minutes(t0, t0.Add(time.Hour))
	var requests, pageviews int64
	for _, m := range minutes {
		requests += m.Requests
		pageviews += m.PageViews
	}
	if requests != 300 || pageviews != 300 {
		t.Errorf("stored %d requests, %d page views; want 300 and 300", requests, pageviews)
	}
	if off, _, _ := s.Position("f"); off != third.Offset {
		t.Errorf("position = %d, want %d", off, third.Offset)
	}
}

// TestRunLogsFormatHintOnce: run keeps following lines in another format
// than the one given, and logs the same hint once.
func TestRunLogsFormatHintOnce(t *testing.T) {
	format, err := parser.New("main")
	if err != nil {
		t.Fatal(err)
	}
	_, classifier := ingesttest.Combined(t)
	var log bytes.Buffer
	core := ingest.Deps{Format: format, Classifier: classifier, Logger: slog.New(slog.NewTextHandler(&log, nil))}
	l := mustNew(t, Config{Anchor: AnchorLog}, Deps{Deps: core, Store: ingesttest.Store(t),
		Window: window.New(window.Config{Length: 10 * time.Minute}, t0)})
	run(t, l, ingesttest.Chunks(1_000, 4096)...)
	if n := strings.Count(log.String(), "most lines are rejected"); n != 1 ||
		!strings.Contains(log.String(), "parse with --format combined") {
		t.Errorf("log has the hint %d times, want once:\n%s", n, log.String())
	}
}

// BenchmarkApply is the serial part of the live loop: hits routed, added
// to the windows and the batches. The commits are left out.
func BenchmarkApply(b *testing.B) {
	b.Run("window", func(b *testing.B) {
		store := ingesttest.Store(b)
		l := newLoop(b, Config{Anchor: AnchorLog}, store, t0)
		cs := ingesttest.Chunks(50_000, tailer.ChunkSize)
		rs := make([]ingest.Result, len(cs))
		var sc ingest.Scratch
		for i, c := range cs {
			l.Parse(c, &sc, &rs[i])
		}
		b.ReportAllocs()
		for range b.N {
			for i := range rs {
				l.Route(&rs[i])
				l.apply(&rs[i])
			}
			b.StopTimer()
			if err := l.commit(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
}
