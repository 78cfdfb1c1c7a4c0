package window

import (
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestPublishedClosedByANewSnapshotOnly(t *testing.T) {
	w := New(DefaultConfig(), t0)
	first := w.Published()
	if again := w.Published(); again != first {
		t.Fatal("two waiters before a publish got different channels")
	}
	w.Publish() // nothing changed: no new snapshot
	if closed(first) {
		t.Fatal("a Publish that made no snapshot closed the channel")
	}
	w.Add(logtally.Hit{Time: t0.Unix(), Visitor: 1, Path: []byte("/a"), PageView: true})
	w.Publish()
	if !closed(first) {
		t.Fatal("a new snapshot did not close the channel")
	}
	next := w.Published()
	if closed(next) {
		t.Fatal("the channel after a publish is closed already")
	}
	w.Advance(t0.Add(time.Second))
	w.Publish()
	if !closed(next) {
		t.Fatal("a second's snapshot did not close the next channel")
	}
}

// TestNotifierMissesNoPublish: a reader that takes the channel, then
// reads, then waits, sees every value to the last, however the publishes
// and its reads interleave. Run with -race.
func TestNotifierMissesNoPublish(t *testing.T) {
	const last = 20_000
	var (
		n     Notifier
		mu    sync.Mutex
		value int
	)
	read := func() int {
		mu.Lock()
		defer mu.Unlock()
		return value
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next := n.Next()
				if read() == last {
					return
				}
				<-next // a publish after the read closes it: never stuck
			}
		}()
	}
	for i := 1; i <= last; i++ {
		mu.Lock()
		value = i
		mu.Unlock()
		n.Notify()
	}
	wg.Wait()
}

func TestNotifyWithoutWaitersAllocatesNothing(t *testing.T) {
	var n Notifier
	if allocs := testing.AllocsPerRun(1000, n.Notify); allocs != 0 {
		t.Errorf("Notify with nobody waiting: %v allocations, want 0", allocs)
	}
	ch := n.Next()
	n.Notify()
	if !closed(ch) {
		t.Error("Notify did not close the channel of a waiter")
	}
}

// BenchmarkPublishSecond is the cheapest Publish that makes a snapshot: a
// second passes and nothing else changes, so the pages are shared. It is
// where the notifier's cost would show.
func BenchmarkPublishSecond(b *testing.B) {
	w := New(DefaultConfig(), t0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.Advance(t0.Add(time.Duration(i+1) * time.Second))
		w.Publish()
	}
}
