// Package waker tells a polling loop when to look again: a ticker in
// production, the test itself in tests.
//
// The one idea that makes it work is that the loop asks for a new wake-up
// channel each time it has finished a pass and goes idle. So a test waker
// knows where the loop's passes begin and end, and a test can wait for "the
// loop has made a whole pass since my change" instead of sleeping and hoping
// that one happened: "nothing more arrives" becomes an event to wait on.
package waker

import (
	"sync"
	"time"
)

// Waker tells a loop when to look for work again.
type Waker interface {
	// Wake returns a channel that is ready when the loop should look
	// again; what it carries means nothing. The loop calls Wake each time
	// it has finished a pass and is about to wait.
	Wake() <-chan time.Time
}

// Ticker wakes on every tick of a time.Ticker. Its owner stops the ticker.
type Ticker struct{ *time.Ticker }

// Wake returns the ticker's channel.
func (t Ticker) Wake() <-chan time.Time { return t.C }

// Test is a Waker that a test drives with Next. Its zero value is ready to
// use.
type Test struct {
	mu      sync.Mutex
	passes  int            // how many times the loop went idle
	wake    chan time.Time // what the idle loop waits on; nil once closed
	waiters []waiter       // Next calls not answered yet
}

type waiter struct {
	until int // the value of passes that answers it
	done  chan struct{}
}

// Wake is called by the loop as it goes idle. It answers the Next calls
// whose pass is over, and wakes the loop again at once while others wait.
func (w *Test) Wake() <-chan time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.passes++
	kept := w.waiters[:0]
	for _, wt := range w.waiters {
		if w.passes >= wt.until {
			close(wt.done)
		} else {
			kept = append(kept, wt)
		}
	}
	clear(w.waiters[len(kept):])
	w.waiters = kept
	c := make(chan time.Time)
	if len(w.waiters) > 0 {
		close(c)
		w.wake = nil
		return c
	}
	w.wake = c
	return c
}

// Next wakes the loop. The channel it returns is closed once the loop has
// made a whole pass that began after Next was called: one that saw every
// change the test made before calling it.
func (w *Test) Next() <-chan struct{} {
	done := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	// The loop may be in a pass already, woken by something else, that
	// began before this call: the pass after that one is the first that
	// surely began after it. So the loop must go idle twice.
	w.waiters = append(w.waiters, waiter{until: w.passes + 2, done: done})
	if w.wake != nil {
		close(w.wake)
		w.wake = nil
	}
	return done
}
