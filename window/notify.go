package window

import "sync/atomic"

// Notifier tells the goroutines that wait for it that something new was
// published, without the publisher knowing who they are or waiting on them.
//
// The one idea: a waiter takes a channel, which Notify closes and forgets,
// so the next waiter takes a new one. The channel is made by the first
// waiter, not by Notify: a Notify that nobody waits for costs one atomic
// load and allocates nothing. A waiter that takes the channel before it
// reads what was published misses no publish: one that came after its read
// has closed the channel it holds.
//
// The zero Notifier is ready to use; it must not be copied after first use.
type Notifier struct {
	next atomic.Pointer[chan struct{}] // nil while nobody waits
}

// Next returns a channel that the next Notify closes.
func (n *Notifier) Next() <-chan struct{} {
	for {
		if p := n.next.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if n.next.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// Notify wakes every goroutine waiting on a channel Next returned.
func (n *Notifier) Notify() {
	if n.next.Load() == nil {
		return // nobody waits: the publisher's whole cost
	}
	if p := n.next.Swap(nil); p != nil {
		close(*p)
	}
}

// Published returns a channel that the window's next Publish of a new
// snapshot closes: a reader of Current that takes it first, then reads,
// waits on it for the snapshot after the one it read. A Publish that finds
// nothing changed closes nothing. Any goroutine may call it.
func (w *Window) Published() <-chan struct{} { return w.published.Next() }
