package storage

import (
	"github.com/logtally/logtally/window"
)

// Batch gathers the effect of many lines so that they are committed in one
// transaction, together with the read positions they end at. It is owned by
// one goroutine.
type Batch struct {
	minutes     map[int64]*counts
	seconds     map[int64]*counts
	positions   map[string]int64
	lines       int
	last        int64 // second of the newest line added; rejected lines count there
	windowStart int64 // stored seconds before this are no longer needed

	lastMinute, lastSecond   int64 // the most recent map entries, which most lines hit
	lastMinuteC, lastSecondC *counts
}

// counts is the delta a batch holds for one minute or one second.
type counts struct {
	requests  int64
	pageviews int64
	bytes     int64
	rejected  int64
	status    [5]int64
	visitors  map[uint64]struct{}
	paths     map[string]int64
}

func newCounts() *counts {
	return &counts{visitors: make(map[uint64]struct{}), paths: make(map[string]int64)}
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{
		minutes:   make(map[int64]*counts),
		seconds:   make(map[int64]*counts),
		positions: make(map[string]int64),
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Add records one parsed line in its own minute. If live is true the line is
// inside the live window, and it is also kept per second so that the window
// can be rebuilt exactly after a restart.
func (b *Batch) Add(h window.Hit, status int, bytes int64, live bool) {
	minute := floorDiv(h.Time, 60)
	m := b.lastMinuteC
	if m == nil || minute != b.lastMinute {
		if m = b.minutes[minute]; m == nil {
			m = newCounts()
			b.minutes[minute] = m
		}
		b.lastMinute, b.lastMinuteC = minute, m
	}
	m.hit(h, status, bytes)
	if live {
		s := b.lastSecondC
		if s == nil || h.Time != b.lastSecond {
			if s = b.seconds[h.Time]; s == nil {
				s = newCounts()
				b.seconds[h.Time] = s
			}
			b.lastSecond, b.lastSecondC = h.Time, s
		}
		s.hit(h, status, bytes)
	}
	b.last = max(b.last, h.Time)
}

func (c *counts) hit(h window.Hit, status int, bytes int64) {
	c.requests++
	c.bytes += bytes
	if status >= 100 && status < 600 {
		c.status[status/100-1]++
	}
	if h.PageView {
		c.pageviews++
		c.visitors[h.Visitor] = struct{}{}
		c.paths[string(h.Path)]++
	}
}

// Reject counts a line that did not parse, in the minute of the newest line
// added so far (a rejected line has no time of its own that can be trusted),
// or in the minute of fallback if no line has been added yet.
func (b *Batch) Reject(fallback int64) {
	sec := b.last
	if sec == 0 {
		sec = fallback
	}
	minute := floorDiv(sec, 60)
	m := b.minutes[minute]
	if m == nil {
		m = newCounts()
		b.minutes[minute] = m
	}
	m.rejected++
}

// AddLines counts n lines read, whether or not they parsed.
func (b *Batch) AddLines(n int64) { b.lines += int(n) }

// Lines returns how many lines the batch holds.
func (b *Batch) Lines() int { return b.lines }

// SetPosition records that file has been read up to offset.
func (b *Batch) SetPosition(file string, offset int64) { b.positions[file] = offset }

// SetWindowStart records the first second of the live window: stored
// per-second state from before it is deleted in the same commit.
func (b *Batch) SetWindowStart(sec int64) { b.windowStart = sec }

// Empty reports whether committing the batch would change nothing.
func (b *Batch) Empty() bool { return len(b.minutes) == 0 && len(b.positions) == 0 }

// Reset empties the batch after a successful commit.
func (b *Batch) Reset() {
	clear(b.minutes)
	clear(b.seconds)
	clear(b.positions)
	b.lines, b.last = 0, 0
	b.lastMinuteC, b.lastSecondC = nil, nil
}
