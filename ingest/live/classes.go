package live

import (
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/window"
)

// Named counters that have counted the same lines share one live window,
// a class: at start, those whose windows are empty, or restored from one
// history (storage.Store.Shares); from then on, as long as each line one
// of them counts is counted by all (ingest.Match.Counters). The first line
// that some of a class count and the others do not splits it: those that
// count it get a copy of the window (window.Clone), once, and each part
// counts on its own. So fifty counters that count alike cost one window's
// work a line, and a class never merges again: at most one split per
// counter.
type classes struct {
	of      []int32          // by counter that counts as itself: its class
	win     []*window.Window // by class
	members [][]int32        // by class: its counters
	count   []int32          // scratch of add, by class: its counters among a line's
	touched []int32          // scratch of add: the classes of a line's counters
	one     [1]int32         // scratch of add: a line's counter, when it has one
}

// join puts counter k in a class: win's, if another counter has it, else
// one whose window is empty as win is and configured alike, else one of
// its own. It returns
// the class's window.
func (c *classes) join(k int, win *window.Window) *window.Window {
	for len(c.of) <= k {
		c.of = append(c.of, -1)
	}
	for i, cw := range c.win {
		if cw == win || cw.Empty() && win.Empty() && cw.Alike(win) {
			c.of[k] = int32(i)
			c.members[i] = append(c.members[i], int32(k))
			return cw
		}
	}
	c.of[k] = int32(len(c.win))
	c.win = append(c.win, win)
	c.members = append(c.members, []int32{int32(k)})
	c.count = append(c.count, 0)
	return win
}

// countMatch adds ch, what a hit counts in the counters of m, to their
// windows: once to each class whose counters all count it, after
// splitting each class only some of whose counters do.
func (w *windows) countMatch(m ingest.Match, ch logtally.Hit, now time.Time) {
	c := &w.classes
	ks := m.Counters()
	if ks == nil {
		c.one[0] = int32(m.Counter())
		ks = c.one[:]
	}
	c.touched = c.touched[:0]
	for _, k := range ks {
		cl := c.of[k]
		if c.count[cl] == 0 {
			c.touched = append(c.touched, cl)
		}
		c.count[cl]++
	}
	for _, cl := range c.touched {
		n := c.count[cl]
		c.count[cl] = 0
		if int(n) < len(c.members[cl]) {
			cl = w.split(cl, ks)
		}
		win := c.win[cl]
		w.advance(win, now)
		win.Add(ch)
	}
}

// split moves the counters of class cl that are among ks to a new class
// with a copy of its window, and returns the new class.
func (w *windows) split(cl int32, ks []int32) int32 {
	c := &w.classes
	n := int32(len(c.win))
	win := c.win[cl].Clone()
	c.win = append(c.win, win)
	c.count = append(c.count, 0)
	var in []int32
	stay := c.members[cl][:0]
	for _, k := range c.members[cl] {
		if contains(ks, k) {
			in = append(in, k)
			c.of[k] = n
			w.setCounterWindow(int(k), win)
		} else {
			stay = append(stay, k)
		}
	}
	c.members[cl] = stay
	c.members = append(c.members, in)
	return n
}

// setCounterWindow makes win the window of counter k and of the counters
// that count as k does, for the loop and for readers.
func (w *windows) setCounterWindow(k int, win *window.Window) {
	for i, lead := range w.same {
		if lead == k {
			w.counters[i] = win
			w.byCounter[w.names[i]].Store(win)
		}
	}
}

func contains(ks []int32, k int32) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// counterWindow is a counter's window as readers find it: replaced when
// the counter's class splits.
type counterWindow = atomic.Pointer[window.Window]
