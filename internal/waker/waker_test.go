package waker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// loop is a polling loop as the tailer runs one: each pass records the
// newest change it began after; it is also woken by other, a stand-in for
// file-system events.
func loop(ctx context.Context, w Waker, changes, seen *atomic.Int64, other <-chan struct{}) {
	for {
		seen.Store(changes.Load())
		select {
		case <-ctx.Done():
			return
		case <-w.Wake():
		case <-other:
		}
	}
}

// TestNextWaitsForAWholePass: once Next's channel is closed, the loop has
// made a pass that began after the change made before Next, even while
// something else wakes the loop at random.
func TestNextWaitsForAWholePass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var w Test
	var changes, seen atomic.Int64
	other := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); loop(ctx, &w, &changes, &seen, other) }()
	go func() {
		for {
			select {
			case other <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for i := int64(1); i <= 1000; i++ {
		changes.Store(i)
		select {
		case <-w.Next():
		case <-time.After(10 * time.Second):
			t.Fatalf("change %d: no pass in 10 s", i)
		}
		if got := seen.Load(); got < i {
			t.Fatalf("change %d: the last pass began after change %d only", i, got)
		}
	}
	cancel()
	<-done
}

// TestIdleLoopStaysIdle: without Next, the loop is not woken.
func TestIdleLoopStaysIdle(t *testing.T) {
	var w Test
	c := w.Wake()
	select {
	case <-c:
		t.Fatal("woken without Next")
	default:
	}
	next := w.Next()
	select {
	case <-c:
	default:
		t.Fatal("Next did not wake the idle loop")
	}
	w.Wake() // the pass Next woke may have begun before it
	select {
	case <-next:
		t.Fatal("Next answered after one pass")
	default:
	}
	select {
	case <-w.Wake():
		t.Fatal("woken again with no Next waiting")
	default:
	}
	select {
	case <-next:
	default:
		t.Fatal("Next not answered after two passes")
	}
}
