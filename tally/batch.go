package tally

import (
	"github.com/logtally/logtally"
	"iter"
	"maps"
	"slices"
	"sync/atomic"
)

// Batch gathers the effect of many lines so that they are committed in one
// transaction, together with the read positions they end at. It is owned by
// one goroutine.
//
// A line costs two appends and one map lookup: each distinct path is given
// a number once (ids), and a minute or second keeps the number and visitor
// of each page view in lists. With its path numbered already
// (AddNumbered), a line costs no lookup at all. Counting them is left to the commit, which
// does it with arrays indexed by path number rather than with maps keyed by
// strings.
type Batch struct {
	site        string  // "" is logtally.DefaultSite
	share       sharing // with the sites of counters that count the same
	minutes     map[int64]*Delta
	seconds     map[int64]*Delta
	positions   map[string]int64
	lines       int
	last        int64 // second of the newest line added; rejected lines count there
	windowStart int64 // stored seconds before this are no longer needed
	// keysOnly keeps no visitor in the batch's minutes (SetKeysOnly).
	keysOnly bool

	lastMinute, lastSecond   int64 // the most recent map entries, which most lines hit
	lastMinuteC, lastSecondC *Delta

	// ids numbers the paths seen; names[id] is the path. They outlive Reset
	// so that a busy site's paths are not copied again for every batch, up
	// to maxKeptPaths.
	ids      map[string]int32
	names    []string
	lastPath int32    // the path PathNumber gave last, if still in names
	spare    []*Delta // counts emptied by Reset, reused
	// numbering names the numbering of names (see Numbering).
	numbering uint64
}

// numberings hands out the numbering stamps of batches (Batch.Numbering).
var numberings atomic.Uint64

// maxKeptPaths is how many path numbers a batch keeps across Reset: more
// than a busy site's paths of a day (the default MaxDayPaths), so that its
// numbering lasts. Past it Reset forgets them all, so that a flood of random
// paths holds at most maxKeptPaths plus one batch worth of them.
const maxKeptPaths = 1 << 17

// Delta is the change a batch makes to one minute or one second.
type Delta struct {
	Requests  int64
	PageViews int64
	Bytes     int64
	Rejected  int64
	Status    [5]int64 // requests by status class: 1xx ... 5xx
	// Visitors holds the visitor of each page view, repeats included. A
	// sink may sort it and drop repeats in place: the set stays the same,
	// so a batch whose commit failed can be committed again.
	Visitors []uint64
	Views    []int32 // path number of each page view; see Batch.Paths
}

// NewBatch returns an empty batch of logtally.DefaultSite.
func NewBatch() *Batch { return NewSiteBatch(logtally.DefaultSite) }

// NewSiteBatch returns an empty batch of the lines of one site.
func NewSiteBatch(site string) *Batch {
	return &Batch{
		site:      site,
		minutes:   make(map[int64]*Delta),
		seconds:   make(map[int64]*Delta),
		positions: make(map[string]int64),
		ids:       make(map[string]int32),
		numbering: numberings.Add(1),
	}
}

// Numbering returns a stamp of the batch's path numbers, which no other
// batch has and which changes when Reset forgets them: what a caller
// derived from a path's number (PathNumber) holds while it is the same.
func (b *Batch) Numbering() uint64 { return b.numbering }

// sharing is what a batch shares its lines with: the other sites whose
// lines they are (SetAlso), and for a view made by As, the batch it is of.
type sharing struct {
	also []string
	of   *Batch
}

// SetAlso records that the batch's lines are those of the sites names
// too: named counters that count the same lines under the same keys are
// counted once, and committed under each name (see As). It outlives Reset.
func (b *Batch) SetAlso(names []string) { b.share.also = names }

// Also returns the other sites whose lines the batch holds (SetAlso).
func (b *Batch) Also() []string { return b.share.also }

// As returns the batch as site's: the same lines, not a copy, for a
// commit to write under site too (see SetAlso). It is read-only: it must
// not be added to nor Reset, and it is b's until b changes.
func (b *Batch) As(site string) *Batch {
	v := *b
	v.site, v.share = site, sharing{of: b.origin()}
	v.spare = nil // so that a Reset by mistake cannot hand out b's
	return &v
}

// SetKeysOnly makes the batch keep, in its minutes, the page views of
// each path but not their visitors: what a breakdown's history needs, whose
// range answers are per-day counts of its keys. A minute then costs no
// sort of its visitors and no sketch at commit, and its stored record has
// no visitors (0); the live window's seconds keep theirs, so a restart
// rebuilds its visitors per key exactly. The encoding is unchanged: a
// delta with page views and no visitors is one a sink already reads. It
// outlives Reset.
func (b *Batch) SetKeysOnly(on bool) { b.keysOnly = on }

// KeysOnly reports whether the batch keeps no visitors in its minutes
// (SetKeysOnly).
func (b *Batch) KeysOnly() bool { return b.keysOnly }

// Same reports whether b and o hold the same lines: o is b, or one is a
// view of the other made by As, or both are of the same batch.
func (b *Batch) Same(o *Batch) bool { return b.origin() == o.origin() }

// origin is the batch whose lines b holds: b, or for a view what it is of.
func (b *Batch) origin() *Batch {
	if b.share.of != nil {
		return b.share.of
	}
	return b
}

// Site returns the site the batch's lines belong to.
func (b *Batch) Site() string {
	if b.site == "" {
		return logtally.DefaultSite
	}
	return b.site
}

func (b *Batch) newCounts() *Delta {
	if n := len(b.spare); n > 0 {
		c := b.spare[n-1]
		b.spare = b.spare[:n-1]
		return c
	}
	return &Delta{}
}

// Add records one parsed line in its own minute. If live is true the line is
// inside the live window, and it is also kept per second so that the window
// can be rebuilt exactly after a restart.
func (b *Batch) Add(h *logtally.Hit, live bool) {
	id := int32(-1)
	if h.PageView {
		id = b.PathNumber(h.Path)
	}
	b.AddNumbered(h, id, live)
}

// PathNumber returns the number of path in the batch (its index in
// Paths), giving it the next one if it has none. A caller that adds many
// page views of few paths numbers each path once and adds the views with
// AddNumbered, which does not read their paths.
func (b *Batch) PathNumber(path []byte) int32 {
	// A breakdown's lines come with few keys, often the line before's
	// (an hour, a status, a referrer of a page's assets): a compare
	// spares the hash.
	if int(b.lastPath) < len(b.names) && b.names[b.lastPath] == string(path) {
		return b.lastPath
	}
	id, ok := b.ids[string(path)]
	if !ok {
		id = b.newPath(string(path))
	}
	b.lastPath = id
	return id
}

// newPath gives path p, which has none, the next number.
func (b *Batch) newPath(p string) int32 {
	id := int32(len(b.names))
	b.ids[p] = id
	b.names = append(b.names, p)
	return id
}

// AddNumbered is Add for a hit whose path, if it is a page view, has the
// number id in the batch (PathNumber): its path is not read. Parsing
// workers number a chunk's paths (ingest.Result.NumberPaths), so that the
// one goroutine that adds the hits hashes each path once a chunk, not the
// path of every page view, which lies in a chunk another core read last.
func (b *Batch) AddNumbered(h *logtally.Hit, id int32, live bool) {
	m := b.minute(logtally.FloorDiv(h.Time, 60))
	if b.keysOnly {
		m.view(h, id)
	} else {
		m.hit(h, id)
	}
	if live {
		s := b.lastSecondC
		if s == nil || h.Time != b.lastSecond {
			if s = b.seconds[h.Time]; s == nil {
				s = b.newCounts()
				b.seconds[h.Time] = s
			}
			b.lastSecond, b.lastSecondC = h.Time, s
		}
		s.hit(h, id)
	}
	b.last = max(b.last, h.Time)
}

// Views is what n hits outside the live window add to a keys-only
// batch's minute beyond their path: how many they are, their bytes, their
// statuses by class (as Delta.Status) and the newest one's second.
type Views struct {
	N, Bytes int64
	Status   [5]int64
	Last     int64
}

// Count adds hit h to v.
func (v *Views) Count(h *logtally.Hit) {
	v.N++
	v.Bytes += h.Bytes
	if h.Status >= 100 && h.Status < 600 {
		v.Status[h.Status/100-1]++
	}
	v.Last = max(v.Last, h.Time)
}

// AddViews adds v.N page views of path in minute, as many calls of Add
// outside the live window would (not in the live window: no second is
// kept), in one step. It is for a keys-only batch (SetKeysOnly), whose
// minutes keep no visitor, so that n page views of a key in a minute are
// all that n hits tell it: a replay adds a breakdown's keys so, counted
// by key and minute as their lines were parsed. It panics on a batch that
// keeps visitors, which the hits' visitors would be missing from.
func (b *Batch) AddViews(minute int64, path []byte, v *Views) {
	if !b.keysOnly {
		panic("tally: AddViews on a batch that keeps visitors")
	}
	if v.N <= 0 {
		return
	}
	id := b.PathNumber(path)
	m := b.minute(minute)
	m.Requests += v.N
	m.PageViews += v.N
	m.Bytes += v.Bytes
	for i, n := range v.Status {
		m.Status[i] += n
	}
	m.Views = slices.Grow(m.Views, int(v.N))
	for range v.N {
		m.Views = append(m.Views, id)
	}
	b.last = max(b.last, v.Last)
}

// minute returns the delta of a unix minute, made if there is none: the
// last one asked for, most lines', without a lookup.
func (b *Batch) minute(minute int64) *Delta {
	m := b.lastMinuteC
	if m == nil || minute != b.lastMinute {
		if m = b.minutes[minute]; m == nil {
			m = b.newCounts()
			b.minutes[minute] = m
		}
		b.lastMinute, b.lastMinuteC = minute, m
	}
	return m
}

func (c *Delta) hit(h *logtally.Hit, path int32) {
	c.view(h, path)
	if h.PageView {
		c.Visitors = append(c.Visitors, h.Visitor)
	}
}

// view is hit without the visitor: see Batch.SetKeysOnly.
func (c *Delta) view(h *logtally.Hit, path int32) {
	c.Requests++
	c.Bytes += h.Bytes
	if h.Status >= 100 && h.Status < 600 {
		c.Status[h.Status/100-1]++
	}
	if h.PageView {
		c.PageViews++
		c.Views = append(c.Views, path)
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
	minute := logtally.FloorDiv(sec, 60)
	m := b.minutes[minute]
	if m == nil {
		m = b.newCounts()
		b.minutes[minute] = m
	}
	m.Rejected++
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
	for _, m := range []map[int64]*Delta{b.minutes, b.seconds} {
		for _, c := range m {
			if len(b.spare) < maxSpare && cap(c.Visitors) <= maxSpareCap && cap(c.Views) <= maxSpareCap {
				*c = Delta{Visitors: c.Visitors[:0], Views: c.Views[:0]}
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
		b.numbering = numberings.Add(1)
	}
	b.lines, b.last = 0, 0
	b.lastMinuteC, b.lastSecondC = nil, nil
}

// Minutes returns the batch's minutes, unix minute to delta, in time order.
func (b *Batch) Minutes() iter.Seq2[int64, *Delta] { return sortedDeltas(b.minutes) }

// Seconds returns the live window's seconds the batch holds, unix second
// to delta, in time order.
func (b *Batch) Seconds() iter.Seq2[int64, *Delta] { return sortedDeltas(b.seconds) }

func sortedDeltas(m map[int64]*Delta) iter.Seq2[int64, *Delta] {
	return func(yield func(int64, *Delta) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// MinuteCount returns how many minutes the batch touches.
func (b *Batch) MinuteCount() int { return len(b.minutes) }

// Positions returns the read positions the batch ends at, file id to
// offset. The map is the batch's own: read it, do not keep it.
func (b *Batch) Positions() map[string]int64 { return b.positions }

// Paths returns the batch's path names, indexed by the numbers in
// Delta.Views. A path mostly keeps its number across Reset (up to
// maxKeptPaths paths), so a sink may remember what it derived from a
// number, checking the path against Paths before it trusts it again.
func (b *Batch) Paths() []string { return b.names }

// WindowStart returns the first second of the live window when the batch
// was filled; stored per-second state from before it is no longer needed.
func (b *Batch) WindowStart() int64 { return b.windowStart }
