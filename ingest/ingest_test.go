package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
	"github.com/logtally/logtally/window"
)

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

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func chunk(offset int64, from, n int) tailer.Chunk {
	var data []byte
	for i := from; i < from+n; i++ {
		data = fmt.Appendf(data, "192.0.2.%d - - [%s] \"GET /p%d HTTP/1.1\" 200 10 \"-\" \"Firefox\"\n",
			i%20, t0.Add(time.Duration(i)*time.Second).Format("02/Jan/2006:15:04:05 -0700"), i%3)
	}
	return tailer.Chunk{File: "f", Data: data, Offset: offset + int64(len(data))}
}

func TestWriteFailurePausesAndLosesNothing(t *testing.T) {
	s, err := storage.Open(storage.Config{Path: filepath.Join(t.TempDir(), "db"), TZ: "UTC"},
		func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	store := &flakyStore{Store: s}
	format, _ := parser.New("combined")
	classifier, err := classify.New(classify.DefaultConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(5 * time.Minute) // after every line the test writes
	p := mustNew(t, Config{FlushLines: 50, FlushInterval: time.Millisecond}, Deps{Format: format, Classifier: classifier,
		Window: window.New(window.DefaultConfig(), now), Store: store, Now: func() time.Time { return now }})

	in := make(chan tailer.Chunk)
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background(), in) }()

	first := chunk(0, 0, 100)
	in <- first
	poll.Until(t, "the first chunk committed", func() bool { return p.Commits() > 0 })

	store.failing.Store(true)
	second := chunk(first.Offset, 100, 100)
	in <- second
	poll.Until(t, "the failure to show", func() bool { return p.Err() != nil })
	if !errors.Is(p.Err(), errDiskFull) {
		t.Fatalf("Err = %v, want the store's error", p.Err())
	}
	third := chunk(second.Offset, 200, 100)
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
	if p.Err() != nil {
		t.Errorf("Err = %v after recovery", p.Err())
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

// mustNew returns New's pipeline, failing t if there is none.
func mustNew(t testing.TB, cfg Config, deps Deps) *Pipeline {
	t.Helper()
	p, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
