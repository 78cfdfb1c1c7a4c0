// Package window keeps the live counts of the last few minutes: requests,
// page views, unique visitors and page views per path.
//
// Counts are kept per second in a ring that covers the window, with running
// totals beside it: adding a hit touches one slot and the totals, and moving
// the clock forward subtracts the seconds that leave. A visitor stays counted
// for as long as its latest page view is inside the window, which is what
// makes the unique count exact. One goroutine owns a Window; readers get an
// immutable Snapshot that the owner publishes, so reads never wait on ingest.
package window

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// DefaultLength is the default window length.
const DefaultLength = 10 * time.Minute

// MaxPages is how many of the top pages a Snapshot carries.
const MaxPages = 1000

// Config configures a Window.
type Config struct {
	Length time.Duration // window length, whole seconds; default DefaultLength
}

// RegisterFlags registers the window's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Length, "window", DefaultLength, "length of the live window, whole seconds")
}

// Validate reports a configuration that New would have to correct.
func (c Config) Validate() error {
	if c.Length < time.Second || c.Length%time.Second != 0 {
		return fmt.Errorf("window %s: must be whole seconds, at least 1s", c.Length)
	}
	return nil
}

// Window holds the per-second counts for (now-Length, now]. It is not safe
// for concurrent use, except for Current, which any goroutine may call.
type Window struct {
	length int64 // seconds
	now    int64 // last second inside the window
	slots  []slot

	requests  int64
	pageviews int64
	visitors  map[uint64]int64 // visitor -> second of its latest page view
	paths     map[string]int64 // path -> page views in the window
	pending   []pendingHit     // hits from seconds after now, held until then

	current atomic.Pointer[Snapshot]
}

type slot struct {
	sec       int64
	requests  int64
	pageviews int64
	visitors  []uint64         // visitors with a page view in this second
	paths     map[string]int64 // page views per path in this second
}

type pendingHit struct {
	Hit
	path string
}

// New returns an empty window whose last second is now.
func New(cfg Config, now time.Time) *Window {
	if cfg.Length <= 0 {
		cfg.Length = DefaultLength
	}
	n := int64(cfg.Length / time.Second)
	if n < 1 {
		n = 1
	}
	w := &Window{
		length:   n,
		now:      now.Unix(),
		slots:    make([]slot, n),
		visitors: make(map[uint64]int64),
		paths:    make(map[string]int64),
	}
	for s := w.now - n + 1; s <= w.now; s++ {
		w.slots[w.index(s)].sec = s
	}
	w.Publish()
	return w
}

func (w *Window) index(sec int64) int {
	i := sec % w.length
	if i < 0 {
		i += w.length
	}
	return int(i)
}

// Add counts one hit. A hit older than the window is ignored (it belongs to
// history only); a hit from a second after now is held until Advance reaches
// that second. Add reports whether the hit was counted or held.
func (w *Window) Add(h Hit) bool {
	switch {
	case h.Time <= w.now-w.length:
		return false
	case h.Time > w.now:
		w.pending = append(w.pending, pendingHit{Hit: h, path: string(h.Path)})
		return true
	}
	w.add(h, h.Path)
	return true
}

func (w *Window) add(h Hit, path []byte) {
	s := &w.slots[w.index(h.Time)]
	s.requests++
	w.requests++
	if !h.PageView {
		return
	}
	s.pageviews++
	w.pageviews++
	if last, ok := w.visitors[h.Visitor]; !ok || h.Time > last {
		w.visitors[h.Visitor] = h.Time
		s.visitors = append(s.visitors, h.Visitor)
	}
	if s.paths == nil {
		s.paths = make(map[string]int64)
	}
	s.paths[string(path)]++
	w.paths[string(path)]++
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
	s := &w.slots[w.index(sec)]
	s.requests += requests
	w.requests += requests
	s.pageviews += pageviews
	w.pageviews += pageviews
	for _, v := range visitors {
		if last, ok := w.visitors[v]; !ok || sec > last {
			w.visitors[v] = sec
			s.visitors = append(s.visitors, v)
		}
	}
	if len(paths) > 0 && s.paths == nil {
		s.paths = make(map[string]int64, len(paths))
	}
	for p, n := range paths {
		s.paths[p] += n
		w.paths[p] += n
	}
}

// Advance moves the window so that its last second is now. Seconds that leave
// the window are subtracted; held hits whose second has come are counted.
// A now earlier than the current end is ignored: the window never goes back.
func (w *Window) Advance(now time.Time) {
	to := now.Unix()
	if to <= w.now {
		return
	}
	from := w.now + 1
	if to-from >= w.length {
		from = to - w.length + 1
	}
	for sec := from; sec <= to; sec++ {
		w.evict(&w.slots[w.index(sec)])
		w.slots[w.index(sec)].sec = sec
	}
	w.now = to
	if len(w.pending) > 0 {
		keep := w.pending[:0]
		for _, p := range w.pending {
			if p.Time > w.now {
				keep = append(keep, p)
				continue
			}
			if p.Time > w.now-w.length {
				w.add(p.Hit, []byte(p.path))
			}
		}
		clear(w.pending[len(keep):])
		w.pending = keep
	}
}

// evict subtracts a slot's counts from the totals and empties it.
func (w *Window) evict(s *slot) {
	w.requests -= s.requests
	w.pageviews -= s.pageviews
	for _, v := range s.visitors {
		if w.visitors[v] == s.sec {
			delete(w.visitors, v)
		}
	}
	for p, n := range s.paths {
		if w.paths[p] -= n; w.paths[p] <= 0 {
			delete(w.paths, p)
		}
	}
	s.requests, s.pageviews = 0, 0
	s.visitors = s.visitors[:0]
	clear(s.paths)
}

// Start returns the first second inside the window.
func (w *Window) Start() int64 { return w.now - w.length + 1 }

// Snapshot is an immutable view of a window at one moment.
type Snapshot struct {
	From      time.Time // start of the window: its first second
	To        time.Time // end of the window: just after its last second
	Length    time.Duration
	Requests  int64
	PageViews int64
	Visitors  int64
	Pages     []PageCount // top pages, most viewed first, then by path
}

// PageCount is one path's page views in a Snapshot.
type PageCount struct {
	Path      string
	PageViews int64
}

// PathViews returns a path's page views in the snapshot, and whether the
// path is among the snapshot's pages.
func (s *Snapshot) PathViews(path string) (int64, bool) {
	for _, p := range s.Pages {
		if p.Path == path {
			return p.PageViews, true
		}
	}
	return 0, false
}

// Publish builds a Snapshot of the current counts and makes it the one that
// Current returns.
func (w *Window) Publish() *Snapshot {
	s := &Snapshot{
		From:      time.Unix(w.now-w.length+1, 0).UTC(),
		To:        time.Unix(w.now+1, 0).UTC(),
		Length:    time.Duration(w.length) * time.Second,
		Requests:  w.requests,
		PageViews: w.pageviews,
		Visitors:  int64(len(w.visitors)),
		Pages:     make([]PageCount, 0, min(len(w.paths), MaxPages)),
	}
	for p, n := range w.paths {
		s.Pages = append(s.Pages, PageCount{Path: p, PageViews: n})
	}
	slices.SortFunc(s.Pages, func(a, b PageCount) int {
		if c := cmp.Compare(b.PageViews, a.PageViews); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	if len(s.Pages) > MaxPages {
		s.Pages = s.Pages[:MaxPages:MaxPages]
	}
	w.current.Store(s)
	return s
}

// Current returns the last published Snapshot. It is safe to call from any
// goroutine and never blocks.
func (w *Window) Current() *Snapshot { return w.current.Load() }
