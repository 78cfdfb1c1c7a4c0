package ingest

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
)

// router knows the sites and the named counters, and which of their
// batches hold lines. It belongs to the goroutine that applies lines, but
// for count, which readers load.
type router struct {
	multi    bool
	all      *Site   // every line's: the all-sites view, or with one site DefaultSite
	sites    []*Site // by id, all first
	byName   map[string]*Site
	named    int // sites counted against maxSites
	maxSites int
	count    atomic.Int64 // sites counted apart, all-sites view aside, for SiteStats
	counters []*Site      // by declaration order; one that counts as another does is that one's
	groups   groups       // of counters that count lines alike
	touched  []*Site      // sites whose batch holds lines, all aside
	pending  []*Site      // Pending's answer, reused
	newSite  func(*Site) error
	// errLogged is set once a site's failure has been logged.
	errLogged bool
	log       *slog.Logger
}

// init adds the all-sites view (or with one site, DefaultSite), the known
// sites and the counters.
func (rt *router) init(cfg Config, deps Deps) error {
	rt.multi, rt.maxSites, rt.newSite, rt.log = cfg.Multi(), cfg.MaxSites, deps.NewSite, deps.Logger
	rt.byName = make(map[string]*Site)
	first := logtally.DefaultSite
	if rt.multi {
		first = logtally.AllSites
	}
	var err error
	if rt.all, err = rt.addSite(first); err != nil {
		return err
	}
	if rt.multi {
		for _, name := range deps.KnownSites {
			if name == logtally.AllSites || rt.byName[name] != nil {
				continue
			}
			if _, err := rt.addSite(name); err != nil {
				return err
			}
		}
	}
	if err := rt.addCounters(deps.Counters); err != nil {
		return err
	}
	return rt.addBreakdowns(deps.Breakdowns)
}

// addCounters adds a site of its own for each declared counter, whose
// paths are the counter's keys (logtally.CounterSite). A counter that
// counts the same as one declared before it (counter.Matcher.Same) is
// counted in that one's site, whose batch is committed under both names.
func (rt *router) addCounters(m *counter.Matcher) error {
	if m == nil {
		return nil
	}
	cs := m.Counters()
	for i, c := range cs {
		if lead := m.Same(i); lead != i {
			s := rt.counters[lead]
			s.also = append(s.also, logtally.CounterSite(c.Name))
			s.Batch.SetAlso(s.also)
			rt.counters = append(rt.counters, s)
			continue
		}
		s := newSite(logtally.CounterSite(c.Name), i, true)
		if rt.newSite != nil {
			if err := rt.newSite(s); err != nil {
				return fmt.Errorf("counter %s: %w", c.Name, err)
			}
		}
		rt.counters = append(rt.counters, s)
	}
	return nil
}

// route finds the site of each of r's hits, once: the chunk's file's (or
// the default) for all of them, or with sites by field each hit's own.
// The all-sites view is no site of its own: a hit that goes to it alone
// has none.
func (rt *router) route(r *Result) {
	if !rt.multi {
		return
	}
	rr := &r.route
	if r.siteName != nil {
		rr.site = rt.own(rt.siteOf(r.siteName))
		if rr.site != nil && !bytes.Equal(r.siteName, defaultSite) {
			rr.fileSite = rr.site
		}
		return
	}
	rr.perHit = true
	for i := range r.Hits {
		rr.sites = append(rr.sites, rt.own(rt.siteOf(r.hosts.at(i))))
	}
}

// own returns s, or nil if it is the all-sites view.
func (rt *router) own(s *Site) *Site {
	if s == rt.all {
		return nil
	}
	return s
}

// siteOf returns the site of a line given its host (normalised), or its
// file's site. A site first seen once MaxSites are counted is OtherSite.
func (rt *router) siteOf(host []byte) *Site {
	if s, ok := rt.byName[string(host)]; ok {
		return s
	}
	name := string(host)
	if rt.named >= rt.maxSites {
		name = logtally.OtherSite
		if s := rt.byName[name]; s != nil {
			return s
		}
	}
	s, err := rt.addSite(name)
	if err != nil {
		// A window that cannot be restored: count under the all-sites view
		// alone, and say so once.
		if !rt.errLogged {
			rt.errLogged = true
			rt.log.Error("cannot restore a site's window; its lines count in the all-sites view only", "site", name, "err", err)
		}
		return rt.all
	}
	return s
}

// addSite adds a site, once newSite had it.
func (rt *router) addSite(name string) (*Site, error) {
	s := newSite(name, len(rt.sites), false)
	if rt.newSite != nil {
		if err := rt.newSite(s); err != nil {
			return nil, fmt.Errorf("site %s: %w", name, err)
		}
	}
	rt.byName[name] = s
	rt.sites = append(rt.sites, s)
	if name != logtally.AllSites && name != logtally.OtherSite {
		rt.named++
	}
	if name != logtally.AllSites {
		rt.count.Add(1)
	}
	if name == logtally.OtherSite {
		rt.log.Warn("more sites than --max-sites: lines of sites not seen before count under (other)",
			"max_sites", rt.maxSites, "fix", "raise --max-sites, or map files to sites with --site NAME=PATH")
	}
	return s, nil
}

// touch marks s as holding lines for the next commit.
func (rt *router) touch(s *Site) {
	if !s.inBatch {
		s.inBatch = true
		rt.touched = append(rt.touched, s)
	}
}

// routing is where a result's hits go (see router.route).
type routing struct {
	site     *Site // every hit's, unless perHit
	fileSite *Site // the site the chunk's file is mapped to, for its rejected lines
	perHit   bool  // sites[i] is hit i's; lines name their own
	sites    []*Site
}

func (rr *routing) reset() {
	rr.site, rr.fileSite, rr.perHit, rr.sites = nil, nil, false, rr.sites[:0]
}

// Route finds the site of each of r's hits (see Result.Site), adding the
// sites seen for the first time, in line order, so that MaxSites keeps
// the first ones. Parse must have filled r.
func (c *Core) Route(r *Result) { c.router.route(r) }
