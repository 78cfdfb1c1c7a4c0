package live

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/window"
)

// windows are the live windows: the all-sites view's, each site's and
// each named counter's, by the ids the core gives their sites. The loop's
// goroutine owns them; readers see them through index and byCounter.
type windows struct {
	anchor    string
	all       *window.Window
	sites     []*window.Window // by site id, all's first
	counters  []*window.Window // by counter index
	newWindow func(site string, end time.Time) (*window.Window, error)
	now       func() time.Time
	last      int64 // newest line second seen, for AnchorLog
	// clock is set, with AnchorLog, while no line is stored or seen: the
	// windows follow the clock until the first line, which moves them to
	// its time (restart).
	clock bool
	// names are the site names of the declared counters and then of the
	// breakdowns (logtally.CounterSite, logtally.BreakdownSite); byCounter,
	// their windows by that name, is set in New and only read after.
	names     []string
	same      []int // the counter each one counts as (counter.Matcher.Same), whose window it shares
	byCounter map[string]*counterWindow
	classes   classes // of counters that share a window, having counted alike
	index     atomic.Pointer[siteIndex]
}

// siteIndex is what readers see of the sites: replaced, never changed, when
// a site is added.
type siteIndex struct {
	byName map[string]*window.Window
	names  []string // sorted
}

// init sets the windows up, all's first: deps.Window with one site, else
// the all-sites view's from deps.NewWindow.
func (w *windows) init(cfg Config, deps Deps) error {
	w.anchor, w.newWindow, w.now = cfg.Anchor, deps.NewWindow, deps.Now
	w.byCounter = make(map[string]*counterWindow)
	w.index.Store(&siteIndex{byName: map[string]*window.Window{}})
	if deps.Counters != nil {
		for i, c := range deps.Counters.Counters() {
			w.names = append(w.names, logtally.CounterSite(c.Name))
			w.same = append(w.same, deps.Counters.Same(i))
		}
	}
	if deps.Breakdowns != nil {
		for _, b := range deps.Breakdowns.Breakdowns() {
			w.names = append(w.names, logtally.BreakdownSite(b.String()))
			w.same = append(w.same, len(w.same))
		}
	}
	if len(w.names) > 0 {
		if deps.NewWindow == nil {
			return errors.New("ingest: counters or breakdowns and no NewWindow")
		}
		for _, name := range w.names {
			w.byCounter[name] = new(counterWindow)
		}
		w.counters = make([]*window.Window, len(w.names))
	}
	if !cfg.Ingest.Multi() {
		if w.all = deps.Window; w.all == nil {
			return errors.New("ingest: no window")
		}
	} else {
		if deps.NewWindow == nil {
			return errors.New("ingest: several sites and no NewWindow")
		}
		var err error
		if w.all, err = deps.NewWindow(logtally.AllSites, w.now()); err != nil {
			return fmt.Errorf("site %s: %w", logtally.AllSites, err)
		}
	}
	// A window restored with AnchorLog holds the newest stored minute: an
	// empty one means that nothing is stored.
	w.clock = w.anchor == AnchorLog && w.all.Empty()
	return nil
}

// restart moves every window to end at sec, the first line's, once, when
// nothing was stored: until then they followed the clock.
func (w *windows) restart(sec int64) {
	w.clock = false
	end := time.Unix(sec, 0)
	for _, sw := range w.sites {
		sw.Restart(end)
	}
	for _, cw := range w.classes.win {
		cw.Restart(end)
	}
}

// newSite gives a site or counter the core adds its window (see
// ingest.Deps.NewSite), and a site its place in the readers' index. A
// site's window ends where all's does.
func (w *windows) newSite(s *ingest.Site) error {
	if s.Counter() {
		win, err := w.newWindow(s.Name(), w.end())
		if err != nil {
			return err
		}
		w.setCounterWindow(s.ID(), w.classes.join(s.ID(), win))
		return nil
	}
	win := w.all
	if s.ID() > 0 {
		var err error
		if win, err = w.newWindow(s.Name(), w.end()); err != nil {
			return err
		}
	}
	w.sites = append(w.sites, win)
	if s.Name() == logtally.AllSites {
		return nil
	}
	old := w.index.Load()
	idx := &siteIndex{byName: make(map[string]*window.Window, len(old.byName)+1), names: slices.Clone(old.names)}
	for name, sw := range old.byName {
		idx.byName[name] = sw
	}
	idx.byName[s.Name()] = win
	idx.names = append(idx.names, s.Name())
	slices.Sort(idx.names)
	w.index.Store(idx)
	return nil
}

// end is where a new window ends: the clock's, or where the newest line
// put every window.
func (w *windows) end() time.Time {
	if w.anchor == AnchorLog {
		return time.Unix(w.all.End(), 0)
	}
	return w.now()
}

// of returns a site's or counter's window.
func (w *windows) of(s *ingest.Site) *window.Window {
	if s.Counter() {
		return w.counters[s.ID()]
	}
	return w.sites[s.ID()]
}

// advance moves a window to the loop's end: the clock's, or the newest
// line's.
func (w *windows) advance(win *window.Window, clock time.Time) {
	if w.anchor == AnchorClock || w.clock {
		win.Advance(clock)
	} else if w.last != 0 {
		win.Advance(time.Unix(w.last, 0))
	}
}

// publish publishes every site's window, moved to now first, and with
// counters, each counter's. A window that did not change costs nothing
// to publish.
func (w *windows) publish(now time.Time, counters bool) {
	for _, sw := range w.sites {
		w.advance(sw, now)
		sw.Publish()
	}
	if counters {
		for _, cw := range w.classes.win { // once, not for each counter that shares it
			w.advance(cw, now)
			cw.Publish()
		}
	}
}
