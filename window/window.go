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
	// page view, kept while it is in the window, for the paths the table
	// holds (MaxPaths).
	PathVisitors bool
	// MaxPairs is the most pairs of path and visitor kept with
	// PathVisitors, about 50 bytes each; past it a path's visitors are
	// lower bounds (Snapshot.PageVisitorsApproximate). Zero takes
	// DefaultPairsPerPath pairs a path.
	MaxPairs int
}

// DefaultPairsPerPath is MaxPairs per path of MaxPaths by default: a
// million pairs (about 50 MB) for a named counter's 100,000 keys.
const DefaultPairsPerPath = 10

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
	if c.MaxPairs <= 0 {
		c.MaxPairs = min(c.MaxPaths, 1<<40) * DefaultPairsPerPath
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
	counts // in the whole window
	paths  *pathTable
	pages  int // top paths a snapshot carries

	visitors     visitorCount
	pathVisitors pathVisitors // with Config.PathVisitors
	future       []future     // held hits, one ring slot per second after now
	refs         refCompaction

	changed   bool // counts or bounds changed since the last Publish
	current   atomic.Pointer[logtally.Snapshot]
	published Notifier // closed at each new snapshot: see Published
}

// counts are what a second, or the window, counts besides visitors and
// paths.
type counts struct {
	requests  int64
	pageviews int64
	rejected  int64
}

type slot struct {
	pairs []uint64 // PathVisitors: the pairs whose latest page view was in this second
	sec   int64
	counts
	visitors []uint64  // visitors whose latest page view was in this second
	paths    []pathRef // where this second's page views were counted
}

// New returns an empty window whose last second is now. Zero fields of cfg
// take their defaults, except MaxSkew, for which zero means none.
func New(cfg Config, now time.Time) *Window {
	cfg = cfg.withDefaults()
	n := max(int64(cfg.Length/time.Second), 1)
	skew := max(int64(cfg.MaxSkew/time.Second), 0)
	w := &Window{
		length:   n,
		skew:     skew,
		now:      now.Unix(),
		paths:    newPathTable(cfg.MaxPaths),
		pages:    cfg.Pages,
		visitors: visitorCount{exact: make(map[uint64]int64), max: cfg.MaxVisitors, minStale: minStaleVisitors},
		future:   make([]future, skew),
		refs:     refCompaction{minStale: max(cfg.MaxPaths, minStaleRefs)},
	}
	for i := range w.future {
		w.future[i].sec = -1
	}
	if cfg.PathVisitors {
		w.pathVisitors = pathVisitors{pairs: make(map[uint64]pairState), max: cfg.MaxPairs, dropped: minSecond}
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
	r := w.addPath(s, path, 1)
	if w.pathVisitors.pairs != nil {
		w.addPair(s, r, visitor)
	}
}

// addPath counts n page views of path in slot s, and returns the ref of
// the last of them.
func (w *Window) addPath(s *slot, path []byte, n int64) (r pathRef) {
	for n > 0 {
		r = w.paths.add(path, min(n, maxRefViews))
		if t := w.paths; t.foldedVisitors > 0 {
			w.folded(t.foldedVisitors)
			t.foldedVisitors = 0
		}
		n -= int64(r.n)
		if k := len(s.paths) - 1; k >= 0 && s.paths[k].id == r.id && s.paths[k].gen == r.gen &&
			int(s.paths[k].n)+int(r.n) <= maxRefViews {
			s.paths[k].n += r.n // the same page again in the same second
			continue
		}
		s.paths = append(s.paths, r)
		w.paths.keep(r)
	}
	if t := w.paths; t.stale > w.refs.minStale && t.refs > 2*w.refs.after {
		w.compactRefs()
	}
	return r
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
	w.visitors.rebuilt(w.Start())
	w.changed = true // the bounds moved
}

// evict subtracts a slot's counts from the totals and empties it.
func (w *Window) evict(s *slot) {
	if s.requests == 0 && s.rejected == 0 && len(s.visitors) == 0 && len(s.paths) == 0 && len(s.pairs) == 0 {
		return
	}
	w.requests -= s.requests
	w.pageviews -= s.pageviews
	w.rejected -= s.rejected
	w.visitors.evict(s)
	w.evictPairs(s) // while their paths still hold their entries
	for _, r := range s.paths {
		w.paths.remove(r)
	}
	if t := w.paths; t.foldedVisitors > 0 {
		w.folded(t.foldedVisitors)
		t.foldedVisitors = 0
	}
	s.counts = counts{}
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
		w.fillVisitors(s.Pages)
	}
	s.PageVisitorsApproximate = w.pathVisitors.pairs != nil && w.pathVisitors.dropped > w.now-w.length
	s.Visitors, s.Approximate = w.visitors.count(w.now-w.length, w.now)
	w.changed = false
	w.current.Store(s)
	w.published.Notify()
}

// Current returns the last published snapshot. It is safe to call from any
// goroutine and never blocks.
func (w *Window) Current() *logtally.Snapshot { return w.current.Load() }
