package storage

import (
	"github.com/logtally/logtally/window"
)

// Batch gathers the effect of many lines so that they are committed in one
// transaction. It is owned by one goroutine.
type Batch struct {
	minutes   map[int64]*minuteDelta
	positions map[string]int64
	lines     int
}

type minuteDelta struct {
	requests  int64
	pageviews int64
	visitors  map[uint64]struct{}
	paths     map[string]int64
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{minutes: make(map[int64]*minuteDelta), positions: make(map[string]int64)}
}

// Add records one hit in its own minute.
func (b *Batch) Add(h window.Hit) {
	minute := h.Time / 60
	if h.Time < 0 && h.Time%60 != 0 {
		minute--
	}
	d := b.minutes[minute]
	if d == nil {
		d = &minuteDelta{visitors: make(map[uint64]struct{}), paths: make(map[string]int64)}
		b.minutes[minute] = d
	}
	d.requests++
	if h.PageView {
		d.pageviews++
		d.visitors[h.Visitor] = struct{}{}
		d.paths[string(h.Path)]++
	}
}

// Line counts one line read, whether or not it parsed.
func (b *Batch) Line() { b.lines++ }

// Lines returns how many lines the batch holds.
func (b *Batch) Lines() int { return b.lines }

// SetPosition records that file has been read up to offset.
func (b *Batch) SetPosition(file string, offset int64) { b.positions[file] = offset }

// Empty reports whether committing the batch would change nothing.
func (b *Batch) Empty() bool { return len(b.minutes) == 0 && len(b.positions) == 0 }

// Reset empties the batch after a successful commit.
func (b *Batch) Reset() {
	clear(b.minutes)
	clear(b.positions)
	b.lines = 0
}
