// Package window keeps the live counts of the last few minutes: requests,
// page views, unique visitors, page views per path and rejected lines.
//
// Counts are kept per second in a ring that covers the window, with running
// totals beside it: adding a hit touches one slot and the totals, and moving
// the clock forward subtracts the seconds that leave. A visitor stays counted
// for as long as its latest page view is inside the window, which is what
// makes the unique count exact. One goroutine owns a Window; readers get an
// immutable logtally.Snapshot that the owner publishes, so reads never wait on ingest.
//
// # Time
//
// A hit counts in its own second. One older than the window is history only
// (Add reports TooOld; storage still keeps it). One up to MaxSkew in the
// future is held and counts when its second arrives. One further ahead is
// rejected (TooNew, ErrTooNew) and counted among the window's rejected lines.
//
// # Limits
//
// Memory is bounded whatever the traffic:
//
//   - Paths: at most MaxPaths (default 100,000) distinct paths are counted.
//     Past that, a new path takes over the entry of the least viewed one and
//     inherits its count (Space-Saving). A path that keeps more than
//     PageViews/MaxPaths of the window's views is never taken over and its
//     count stays exact; the counts of paths that were taken over are lower bounds,
//     and a path folded out of the table is missing from Pages. About 100
//     bytes per path plus the path itself.
//   - Visitors: exact up to MaxVisitors (default 5,000,000) distinct visitors
//     in the window, about 40 bytes each. Past that the exact set is dropped
//     for a sliding HyperLogLog (7 MB, 0.81% standard error) and snapshots
//     say Approximate. When the estimate falls under half the cap, an exact
//     set is started again; one window later it covers the whole window and
//     the count is exact again.
//   - Per-second lists: 8 bytes per visitor and per path entry for each
//     second it had page views in, compacted so that they stay within about
//     twice the visitors in the window plus ten per path entry, however
//     many page views (see compactRefs). Held future hits cost their path's
//     bytes plus 24 bytes each, for at most MaxSkew.
package window

import (
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
)

// ErrTooNew is the reason a hit further in the future than MaxSkew is
// rejected: a clock that far ahead is wrong, and holding its lines would let
// one bad server grow memory without bound.
var ErrTooNew = errors.New("timestamp too far in the future")

// Config configures a Window.
type Config struct {
	Length      time.Duration // window length, whole seconds
	MaxSkew     time.Duration // how far in the future a hit may be and still be held
	MaxPaths    int           // distinct paths counted exactly
	MaxVisitors int           // distinct visitors counted exactly
	// Pages is how many of the top paths a snapshot carries;
	// logtally.MaxPages if zero. A counter's window, whose paths are keys,
	// carries them all.
	Pages int
	// PathVisitors counts the distinct visitors of each path, exactly (a
	// named counter's visitors per key): a pair of path and visitor per
	// page view, kept while it is in the window.
	PathVisitors bool
}

// DefaultConfig returns the documented defaults: what the flags start at,
// and what New gives a zero field.
func DefaultConfig() Config {
	return Config{Length: 10 * time.Minute, MaxSkew: 2 * time.Minute, MaxPaths: 100_000, MaxVisitors: 5_000_000}
}

// RegisterFlags sets c to the defaults and registers the window's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.DurationVar(&c.Length, "window", c.Length, "length of the live window, whole seconds")
	fs.DurationVar(&c.MaxSkew, "max-skew", c.MaxSkew,
		"lines up to this far in the future are held until their second; further ahead they are rejected")
	fs.IntVar(&c.MaxPaths, "max-paths", c.MaxPaths,
		"most distinct paths counted in the window; past it the least viewed are folded (top pages stay right)")
	fs.IntVar(&c.MaxVisitors, "max-visitors", c.MaxVisitors,
		"most distinct visitors counted exactly; past it visitors are estimated (HyperLogLog, ~0.8% standard error)")
}

// withDefaults returns c with its zero fields, except MaxSkew (for which
// zero means none), set to the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Length <= 0 {
		c.Length = d.Length
	}
	if c.MaxPaths <= 0 {
		c.MaxPaths = d.MaxPaths
	}
	if c.MaxVisitors <= 0 {
		c.MaxVisitors = d.MaxVisitors
	}
	if c.Pages <= 0 {
		c.Pages = logtally.MaxPages
	}
	return c
}

// Validate reports a configuration that New would have to correct.
func (c Config) Validate() error {
	var errs []error
	if c.Length < time.Second || c.Length%time.Second != 0 {
		errs = append(errs, fmt.Errorf("window %s: must be whole seconds, at least 1s", c.Length))
	}
	if c.MaxSkew < 0 || c.MaxSkew%time.Second != 0 {
		errs = append(errs, fmt.Errorf("max skew %s: must be whole seconds, at least 0", c.MaxSkew))
	}
	if c.MaxPaths < 1 {
		errs = append(errs, fmt.Errorf("max paths %d: must be at least 1", c.MaxPaths))
	}
	if c.MaxVisitors < 1 {
		errs = append(errs, fmt.Errorf("max visitors %d: must be at least 1", c.MaxVisitors))
	}
	return errors.Join(errs...)
}

// Outcome is what Add did with a hit.
type Outcome uint8

// Outcomes of Add.
const (
	Counted Outcome = iota // inside the window, counted
	Held                   // in the future within MaxSkew, counted when its second comes
	TooOld                 // before the window: history only
	TooNew                 // further ahead than MaxSkew: rejected, see ErrTooNew
)

// Window holds the per-second counts for (now-Length, now]. It is not safe
// for concurrent use, except for Current, which any goroutine may call.
type Window struct {
	length int64 // seconds
	skew   int64 // seconds
	now    int64 // last second inside the window
	slots  []slot

	requests  int64
	pageviews int64
	rejected  int64
	paths     *pathTable

	// Visitors. visitors is the exact set, visitor -> second of its latest
	// page view, while it is kept; sketch is the estimate once the set grew
	// past maxVisitors. Both may be set: the set is then being rebuilt, and
	// is exact for seconds from exactSince on.
	maxVisitors int
	pages       int // top paths a snapshot carries

	// With Config.PathVisitors: each pair of path and visitor in the
	// window (a hash of both) -> its latest second and its path's hash,
	// and each path's distinct visitors, by the path's hash.
	pairs        map[uint64]pairState
	pathVisitors map[uint64]int64
	visitors     map[uint64]int64
	sketch       *sketch
	exactSince   int64

	future []future // held hits, one ring slot per second after now

	// Bookkeeping of the per-second lists, which compactVisitors and
	// compactRefs keep in proportion to what the window really holds.
	visitorEntries   int // visitors in all slots' lists
	staleVisitors    int // of those, visitors listed again in a later second
	visitorsAfter    int // visitorEntries after the last compaction
	refsAfter        int // the table's refs after the last compaction
	minStaleVisitors int // least stale visitors worth a compaction
	minStaleRefs     int // least stale refs worth a compaction
	merge            []int64
	touched          []int32

	changed bool // counts or bounds changed since the last Publish
	current atomic.Pointer[logtally.Snapshot]
}

type slot struct {
	pairs     []uint64 // PathVisitors: the pairs whose latest page view was in this second
	sec       int64
	requests  int64
	pageviews int64
	rejected  int64
	visitors  []uint64  // visitors whose latest page view was in this second
	paths     []pathRef // where this second's page views were counted
}

// future holds the hits of one second after now.
type future struct {
	sec   int64
	hits  []heldHit
	bytes []byte // the hits' paths, end to end
}

type heldHit struct {
	visitor  uint64
	off, n   uint32 // path in future.bytes
	pageView bool
}

// New returns an empty window whose last second is now. Zero fields of cfg
// take their defaults, except MaxSkew, for which zero means none.
func New(cfg Config, now time.Time) *Window {
	cfg = cfg.withDefaults()
	n := max(int64(cfg.Length/time.Second), 1)
	skew := max(int64(cfg.MaxSkew/time.Second), 0)
	w := &Window{
		length:      n,
		skew:        skew,
		now:         now.Unix(),
		paths:       newPathTable(cfg.MaxPaths),
		maxVisitors: cfg.MaxVisitors,
		pages:       cfg.Pages,
		visitors:    make(map[uint64]int64),
		future:      make([]future, skew),

		minStaleVisitors: minStaleVisitors,
		minStaleRefs:     max(cfg.MaxPaths, minStaleRefs),
	}
	for i := range w.future {
		w.future[i].sec = -1
	}
	if cfg.PathVisitors {
		w.pairs, w.pathVisitors = make(map[uint64]pairState), make(map[uint64]int64)
	}
	w.changed = true
	w.Publish()
	return w
}

func (w *Window) index(sec int64) int { return mod(sec, w.length) }

// slot returns the slot of second sec. The slots are made on first use: a
// window that never counts anything (a quiet site's, of a thousand) costs
// a few kB rather than a slot for each of its seconds.
func (w *Window) slot(sec int64) *slot {
	if w.slots == nil {
		w.slots = make([]slot, w.length)
		for s := w.now - w.length + 1; s <= w.now; s++ {
			w.slots[w.index(s)].sec = s
		}
	}
	return &w.slots[w.index(sec)]
}

// mod is sec modulo n, from 0 to n-1 also for seconds before 1970.
func mod(sec, n int64) int {
	i := sec % n
	if i < 0 {
		i += n
	}
	return int(i)
}

// Add counts one hit, holds it, or turns it away; see Outcome. A TooNew hit
// is counted as a rejected line. Add does not allocate in steady state.
func (w *Window) Add(h logtally.Hit) Outcome {
	switch {
	case h.Time <= w.now-w.length:
		return TooOld
	case h.Time > w.now+w.skew:
		w.Reject()
		return TooNew
	case h.Time > w.now:
		w.hold(h)
		return Held
	}
	w.add(h.Time, h.PageView, h.Visitor, h.Path)
	return Counted
}

// MaxSkew returns how far ahead of the window's end a hit is held rather
// than rejected. It never changes, so any goroutine may call it.
func (w *Window) MaxSkew() time.Duration { return time.Duration(w.skew) * time.Second }

// Reject counts a rejected line in the window's current second: a line that
// did not parse has no second of its own.
func (w *Window) Reject() {
	w.slot(w.now).rejected++
	w.rejected++
	w.changed = true
}

func (w *Window) add(sec int64, pageView bool, visitor uint64, path []byte) {
	s := w.slot(sec)
	s.requests++
	w.requests++
	w.changed = true
	if !pageView {
		return
	}
	s.pageviews++
	w.pageviews++
	w.addVisitor(s, visitor)
	w.addPath(s, path, 1)
	if w.pairs != nil {
		w.addPair(s, pathHash(path), visitor)
	}
}

// pairState is what the window keeps of a pair of path and visitor.
type pairState struct {
	sec  int64  // the pair's latest page view
	path uint64 // the path's hash
}

// pathHash is a path's hash, as pairs and pathVisitors know it.
func pathHash(path []byte) uint64 { return maphash.Bytes(pathSeed, path) }

var pathSeed = maphash.MakeSeed()

// addPair counts a page view of a path (by its hash) by visitor v in
// slot s: a pair seen for the first time in the window adds a visitor to
// its path; a later page view moves the pair's latest second.
func (w *Window) addPair(s *slot, path, v uint64) {
	k := pairKey(path, v)
	st, ok := w.pairs[k]
	if ok && st.sec >= s.sec {
		return
	}
	if !ok {
		w.pathVisitors[path]++
	}
	w.pairs[k] = pairState{sec: s.sec, path: path}
	s.pairs = append(s.pairs, k)
}

// pairKey mixes a path's hash with a visitor's into a pair's.
func pairKey(path, v uint64) uint64 {
	h := path ^ (v * 0x9e3779b97f4a7c15)
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// SeedPairs adds pairs of path and visitor stored with second sec, as
// Seed adds its counts: a restart keeps each path's distinct visitors.
// The page views are Seed's; only the pairs are added here.
func (w *Window) SeedPairs(sec int64, pairs map[string][]uint64) {
	sec = min(sec, w.now)
	if w.pairs == nil || sec <= w.now-w.length {
		return
	}
	s := w.slot(sec)
	for p, vs := range pairs {
		h := pathHash([]byte(p))
		for _, v := range vs {
			w.addPair(s, h, v)
		}
	}
	w.changed, w.paths.changed = true, true
}

func (w *Window) addVisitor(s *slot, v uint64) {
	if w.visitors != nil {
		if last, ok := w.visitors[v]; !ok || s.sec > last {
			w.visitors[v] = s.sec
			s.visitors = append(s.visitors, v)
			w.visitorEntries++
			switch {
			case !ok && len(w.visitors) > w.maxVisitors:
				w.dropExact()
			case ok: // its entry in second last is stale now
				w.staleVisitors++
				if w.staleVisitors > w.minStaleVisitors && w.visitorEntries > 2*w.visitorsAfter {
					w.compactVisitors()
				}
			}
		}
	}
	if w.sketch != nil {
		w.sketch.add(v, s.sec)
	}
}

// dropExact gives up the exact visitor set, which outgrew its cap, for the
// sketch.
func (w *Window) dropExact() {
	if w.sketch == nil {
		w.sketch = new(sketch)
		for v, sec := range w.visitors {
			w.sketch.add(v, sec)
		}
	}
	w.visitors = nil
	for i := range w.slots {
		w.slots[i].visitors = nil
	}
	w.visitorEntries, w.staleVisitors, w.visitorsAfter = 0, 0, 0
}

// Compaction. A slot lists a visitor when the visitor's latest page view was
// in its second; a visitor seen again later is listed again, and its older
// entry goes stale. The same goes for the path refs of an entry that has
// changed path since (Space-Saving). Stale entries are what would make the
// lists grow with page views rather than with visitors and paths: a flood of
// ten million random paths would leave ten million refs, 8 bytes each.
//
// So once the stale entries are many (minStaleVisitors, minStaleRefs) and
// the lists have doubled since the last compaction, they are compacted: a
// stale visitor is dropped, and the stale refs of one entry within one block
// of a tenth of the window are merged into one ref at the block's first
// second. That ref still brings the entry's count down, up to a tenth of the
// window early; own counts, the ones pages report, only ever come from live
// refs and stay exact. The doubling keeps the work amortised O(1) per hit,
// and the lists within about twice: visitors and paths in the window, plus
// ten refs per path entry.
const (
	minStaleVisitors = 1 << 20 // 8 MB of stale entries
	minStaleRefs     = 1 << 12 // at least; MaxPaths by default
)

// compactVisitors drops the stale entries of the slots' visitor lists.
func (w *Window) compactVisitors() {
	n := 0
	for i := range w.slots {
		s := &w.slots[i]
		kept := s.visitors[:0]
		for _, v := range s.visitors {
			if w.visitors[v] == s.sec {
				kept = append(kept, v)
			}
		}
		s.visitors = shrink(kept)
		n += len(kept)
	}
	w.visitorEntries, w.visitorsAfter, w.staleVisitors = n, n, 0
}

// compactRefs merges the stale path refs of each entry, block by block.
func (w *Window) compactRefs() {
	t := w.paths
	if len(w.merge) < len(t.entries) {
		w.merge = make([]int64, len(t.entries))
	}
	for i := range t.entries {
		t.entries[i].refs = 0
	}
	t.stale = 0
	var first *slot
	flush := func() {
		for _, id := range w.touched {
			e := &t.entries[id]
			for n := w.merge[id]; n > 0; n -= maxRefViews {
				first.paths = append(first.paths, pathRef{id: uint32(id), gen: e.gen - 1, n: uint16(min(n, maxRefViews))})
				t.stale++
			}
			w.merge[id] = 0
		}
		w.touched = w.touched[:0]
	}
	block := max(w.length/10, 1)
	current := int64(-1)
	for sec := w.Start(); sec <= w.now; sec++ {
		s := w.slot(sec)
		if b := (sec - int64(mod(sec, block))) / block; b != current || first == nil {
			if first != nil {
				flush()
			}
			current, first = b, s
		}
		kept := s.paths[:0]
		for _, r := range s.paths {
			if e := &t.entries[r.id]; r.gen == e.gen {
				kept = append(kept, r)
				e.refs++
				continue
			}
			if w.merge[r.id] == 0 {
				w.touched = append(w.touched, int32(r.id))
			}
			w.merge[r.id] += int64(r.n)
		}
		s.paths = kept
	}
	flush()
	t.refs = 0
	for i := range w.slots {
		s := &w.slots[i]
		s.paths = shrink(s.paths)
		t.refs += len(s.paths)
	}
	w.refsAfter = t.refs
}

// shrink returns s in an array of its own size when most of its array is
// unused, so that a second that once held many entries does not keep them.
func shrink[T any](s []T) []T {
	if cap(s) <= 2*len(s)+64 {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func (w *Window) addPath(s *slot, path []byte, n int64) {
	for n > 0 {
		r := w.paths.add(path, min(n, maxRefViews))
		n -= int64(r.n)
		if k := len(s.paths) - 1; k >= 0 && s.paths[k].id == r.id && s.paths[k].gen == r.gen &&
			int(s.paths[k].n)+int(r.n) <= maxRefViews {
			s.paths[k].n += r.n // the same page again in the same second
			continue
		}
		s.paths = append(s.paths, r)
		w.paths.keep(r)
	}
	if t := w.paths; t.stale > w.minStaleRefs && t.refs > 2*w.refsAfter {
		w.compactRefs()
	}
}

// hold keeps a future hit, with a copy of its path, until its second.
func (w *Window) hold(h logtally.Hit) {
	f := &w.future[mod(h.Time, w.skew)]
	if f.sec != h.Time {
		f.sec = h.Time
		f.hits = f.hits[:0]
		f.bytes = f.bytes[:0]
	}
	held := heldHit{visitor: h.Visitor, off: uint32(len(f.bytes)), pageView: h.PageView}
	if h.PageView { // only page views count their path
		held.n = uint32(len(h.Path))
		f.bytes = append(f.bytes, h.Path...)
	}
	f.hits = append(f.hits, held)
}

// Seed adds counts that were stored at minute resolution, as if they all
// happened in second sec, which is clamped to the window's last second. It
// rebuilds a window from storage after a restart: visitors stay exact, and
// each minute leaves the window at once, at most a minute off.
func (w *Window) Seed(sec, requests, pageviews int64, visitors []uint64, paths map[string]int64) {
	sec = min(sec, w.now)
	if sec <= w.now-w.length {
		return
	}
	s := w.slot(sec)
	s.requests += requests
	w.requests += requests
	s.pageviews += pageviews
	w.pageviews += pageviews
	for _, v := range visitors {
		w.addVisitor(s, v)
	}
	for p, n := range paths {
		if n > 0 {
			w.addPath(s, []byte(p), n)
		}
	}
	w.changed = true
}

// SeedRejected adds n rejected lines that were stored at minute resolution,
// as if they were all rejected in second sec, clamped to the window's last
// second as in Seed: a restart keeps the window's rejected count.
func (w *Window) SeedRejected(sec, n int64) {
	sec = min(sec, w.now)
	if sec <= w.now-w.length || n <= 0 {
		return
	}
	w.slot(sec).rejected += n
	w.rejected += n
	w.changed = true
}

// Advance moves the window so that its last second is now. Seconds that leave
// the window are subtracted; held hits whose second has come are counted.
// A now earlier than the current end is ignored: the window never goes back.
func (w *Window) Advance(now time.Time) {
	to := now.Unix()
	if to <= w.now {
		return
	}
	from := max(w.now+1, to-w.length+1)
	for sec := from; w.slots != nil && sec <= to; sec++ {
		s := &w.slots[w.index(sec)]
		w.evict(s)
		s.sec = sec
	}
	old := w.now
	w.now = to
	for sec := old + 1; sec <= min(to, old+w.skew); sec++ {
		w.release(sec)
	}
	if w.visitors != nil && w.sketch != nil && w.now-w.length+1 >= w.exactSince {
		w.sketch = nil // the rebuilt set now covers the whole window
	}
	w.changed = true // the bounds moved
}

// release counts the held hits of second sec, now inside the window.
func (w *Window) release(sec int64) {
	f := &w.future[mod(sec, w.skew)]
	if f.sec != sec {
		return
	}
	f.sec = -1
	if sec <= w.now-w.length {
		return // the window jumped past it: history only
	}
	for _, h := range f.hits {
		w.add(sec, h.pageView, h.visitor, f.bytes[h.off:h.off+h.n])
	}
}

// evict subtracts a slot's counts from the totals and empties it.
func (w *Window) evict(s *slot) {
	if s.requests == 0 && s.rejected == 0 && len(s.visitors) == 0 && len(s.paths) == 0 && len(s.pairs) == 0 {
		return
	}
	w.requests -= s.requests
	w.pageviews -= s.pageviews
	w.rejected -= s.rejected
	for _, v := range s.visitors {
		if w.visitors[v] == s.sec {
			delete(w.visitors, v)
		} else {
			w.staleVisitors--
		}
	}
	w.visitorEntries -= len(s.visitors)
	for _, r := range s.paths {
		w.paths.remove(r)
	}
	for _, k := range s.pairs {
		if st := w.pairs[k]; st.sec == s.sec {
			delete(w.pairs, k)
			if w.pathVisitors[st.path]--; w.pathVisitors[st.path] <= 0 {
				delete(w.pathVisitors, st.path)
			}
		}
	}
	s.pairs = s.pairs[:0]
	s.requests, s.pageviews, s.rejected = 0, 0, 0
	s.visitors = s.visitors[:0]
	s.paths = s.paths[:0]
}

// Start returns the first second inside the window.
func (w *Window) Start() int64 { return w.now - w.length + 1 }

// End returns the last second of the window.
func (w *Window) End() int64 { return w.now }

// Publish makes a snapshot of the current counts the one that Current
// returns. It costs O(P log P), P = Config.Pages, when pages changed
// and nothing when nothing did, so it may be called as often as wanted.
func (w *Window) Publish() {
	if !w.changed {
		return
	}
	s := &logtally.Snapshot{
		From:      time.Unix(w.now-w.length+1, 0).UTC(),
		To:        time.Unix(w.now+1, 0).UTC(),
		Length:    time.Duration(w.length) * time.Second,
		Requests:  w.requests,
		PageViews: w.pageviews,
		Rejected:  w.rejected,
	}
	if prev := w.current.Load(); prev != nil && !w.paths.changed {
		s.Pages = prev.Pages // immutable, so shared
	} else {
		s.Pages = w.paths.top(w.pages)
		w.paths.changed = false
		if w.pathVisitors != nil {
			for i := range s.Pages {
				s.Pages[i].Visitors = w.pathVisitors[pathHash([]byte(s.Pages[i].Path))]
			}
		}
	}
	switch {
	case w.sketch != nil:
		s.Visitors = w.sketch.estimate(w.now - w.length)
		s.Approximate = true
		if w.visitors == nil && s.Visitors < int64(w.maxVisitors/2) {
			// Few enough again: rebuild an exact set from the next second.
			// Hits for it and later all pass through add from here on,
			// held ones included.
			w.visitors = make(map[uint64]int64)
			w.exactSince = w.now + 1
		}
	default:
		s.Visitors = int64(len(w.visitors))
	}
	w.changed = false
	w.current.Store(s)
}

// Current returns the last published snapshot. It is safe to call from any
// goroutine and never blocks.
func (w *Window) Current() *logtally.Snapshot { return w.current.Load() }
