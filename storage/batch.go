package storage

import (
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/logtally/logtally/window"
)

// Batch gathers the effect of many lines so that they are committed in one
// transaction, together with the read positions they end at. It is owned by
// one goroutine.
//
// A line costs two appends and one map lookup: each distinct path is given
// a number once (ids), and a minute or second keeps the number and visitor
// of each page view in lists. Counting them is left to the commit, which
// does it with arrays indexed by path number rather than with maps keyed by
// strings.
type Batch struct {
	minutes     map[int64]*counts
	seconds     map[int64]*counts
	positions   map[string]int64
	lines       int
	last        int64 // second of the newest line added; rejected lines count there
	windowStart int64 // stored seconds before this are no longer needed

	lastMinute, lastSecond   int64 // the most recent map entries, which most lines hit
	lastMinuteC, lastSecondC *counts

	// ids numbers the paths seen; names[id] is the path. They outlive Reset
	// so that a busy site's paths are not copied again for every batch, up
	// to maxKeptPaths.
	ids   map[string]int32
	names []string
	epoch uint64    // names this numbering among all batches' (see Store.xlat)
	spare []*counts // counts emptied by Reset, reused
}

// epochs hands out Batch.epoch values.
var epochs atomic.Uint64

// maxKeptPaths is how many path numbers a batch keeps across Reset: more
// than a busy site's paths of a day (the default MaxDayPaths), so that its
// numbering lasts. Past it Reset forgets them all, so that a flood of random
// paths holds at most maxKeptPaths plus one batch worth of them.
const maxKeptPaths = 1 << 17

// counts is the delta a batch holds for one minute or one second.
type counts struct {
	requests  int64
	pageviews int64
	bytes     int64
	rejected  int64
	status    [5]int64
	// visitors holds the visitor of each page view until the commit sorts
	// it and drops repeats (prepare).
	visitors []uint64
	views    []int32 // path number of each page view
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{
		minutes:   make(map[int64]*counts),
		seconds:   make(map[int64]*counts),
		positions: make(map[string]int64),
		ids:       make(map[string]int32),
		epoch:     epochs.Add(1),
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (b *Batch) newCounts() *counts {
	if n := len(b.spare); n > 0 {
		c := b.spare[n-1]
		b.spare = b.spare[:n-1]
		return c
	}
	return &counts{}
}

// Add records one parsed line in its own minute. If live is true the line is
// inside the live window, and it is also kept per second so that the window
// can be rebuilt exactly after a restart.
func (b *Batch) Add(h window.Hit, status int, bytes int64, live bool) {
	minute := floorDiv(h.Time, 60)
	m := b.lastMinuteC
	if m == nil || minute != b.lastMinute {
		if m = b.minutes[minute]; m == nil {
			m = b.newCounts()
			b.minutes[minute] = m
		}
		b.lastMinute, b.lastMinuteC = minute, m
	}
	id := int32(-1)
	if h.PageView {
		var ok bool
		if id, ok = b.ids[string(h.Path)]; !ok {
			id = int32(len(b.names))
			p := string(h.Path)
			b.ids[p] = id
			b.names = append(b.names, p)
		}
	}
	m.hit(h, status, bytes, id)
	if live {
		s := b.lastSecondC
		if s == nil || h.Time != b.lastSecond {
			if s = b.seconds[h.Time]; s == nil {
				s = b.newCounts()
				b.seconds[h.Time] = s
			}
			b.lastSecond, b.lastSecondC = h.Time, s
		}
		s.hit(h, status, bytes, id)
	}
	b.last = max(b.last, h.Time)
}

func (c *counts) hit(h window.Hit, status int, bytes int64, path int32) {
	c.requests++
	c.bytes += bytes
	if status >= 100 && status < 600 {
		c.status[status/100-1]++
	}
	if h.PageView {
		c.pageviews++
		c.visitors = append(c.visitors, h.Visitor)
		c.views = append(c.views, path)
	}
}

// prepare sorts a delta's visitors and drops repeats. It changes nothing a
// commit stores, so that a batch whose commit failed can be committed again.
func (c *counts) prepare(sc *scratch) {
	sortHashes(c.visitors, sc)
	c.visitors = slices.Compact(c.visitors)
}

// sortHashes sorts visitor hashes. They are uniform, so one pass that
// spreads them by their top bits into buckets of about four leaves little
// for a comparison sort: it is a few times faster than sorting thousands of
// them by comparison alone, as busy minutes need. Skewed input only makes
// the buckets, and their sorting, larger.
func sortHashes(v []uint64, sc *scratch) {
	if len(v) < 256 {
		slices.Sort(v)
		return
	}
	width := bits.Len(uint(len(v))) - 2
	shift := 64 - width
	if cap(sc.buckets) < 1<<width+1 {
		sc.buckets = make([]int32, 1<<width+1)
	}
	ends := sc.buckets[:1<<width+1]
	clear(ends)
	for _, h := range v {
		ends[h>>shift+1]++
	}
	for i := 1; i < len(ends); i++ {
		ends[i] += ends[i-1]
	}
	if cap(sc.hashes) < len(v) {
		sc.hashes = make([]uint64, len(v))
	}
	tmp := sc.hashes[:len(v)]
	for _, h := range v { // ends[b] moves from the start of bucket b to its end
		b := h >> shift
		tmp[ends[b]] = h
		ends[b]++
	}
	start := int32(0)
	for _, end := range ends[:len(ends)-1] {
		if end-start > 1 {
			slices.Sort(tmp[start:end])
		}
		start = end
	}
	copy(v, tmp)
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
		m = b.newCounts()
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

// Reset keeps up to maxSpare emptied counts for the next batch (a
// 50,000-line live batch spans a few hundred seconds), with lists of at most
// maxSpareCap entries: at most 6 MiB whatever batches came before.
const (
	maxSpare    = 512
	maxSpareCap = 1024
)

// Reset empties the batch after a successful commit.
func (b *Batch) Reset() {
	for _, m := range []map[int64]*counts{b.minutes, b.seconds} {
		for _, c := range m {
			if len(b.spare) < maxSpare && cap(c.visitors) <= maxSpareCap && cap(c.views) <= maxSpareCap {
				*c = counts{visitors: c.visitors[:0], views: c.views[:0]}
				b.spare = append(b.spare, c)
			}
		}
		clear(m)
	}
	clear(b.positions)
	if len(b.names) > maxKeptPaths {
		clear(b.ids)
		clear(b.names) // let the strings go
		b.names = b.names[:0]
		b.epoch = epochs.Add(1)
	}
	b.lines, b.last = 0, 0
	b.lastMinuteC, b.lastSecondC = nil, nil
}
