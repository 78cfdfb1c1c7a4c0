package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/logtally/logtally"
)

// Fleet is what the API reads in fleet mode: the whole fleet's View, kept
// fresh in the background, and its history, read from the fleet database.
// With it, /api/v1/stats, /pages, /pages/count, /series and the event
// stream answer for the fleet, and ?scope=node for this node alone.
type Fleet struct {
	// View returns the fleet's latest View, nil before the first read. It
	// must not block: it is the header poll's whole cost.
	View func() *logtally.View
	// History answers history queries from the fleet database, each within
	// a time limit; an error means the database did not answer.
	History History
	// Site, with several sites, returns the fleet's answers for one site,
	// which ?site= then gives (and ?site=&scope=node this node's own); nil
	// answers ?site= from this node's counts.
	Site func(name string) *Fleet
}

// Scopes of the ?scope= parameter.
const (
	ScopeFleet = "fleet" // the whole fleet: the default in fleet mode
	ScopeNode  = "node"  // this node alone: the only scope without fleet mode
)

const (
	errNoView      = "the fleet's counts have not been read yet (the fleet database has not answered since start); ?scope=node answers for this node"
	errUnavailable = "the fleet database did not answer; ?scope=node answers for this node"
)

// scoped routes a request by its scope: to node, this node's handler, or
// to fleet, the fleet's. The scope parameter is taken off the request
// before either sees it. A request without a query, such as the header
// poll, costs no parsing.
func (s *Server) scoped(node, fleet http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" || !r.URL.Query().Has("scope") {
			if s.deps.Fleet == nil {
				node(w, r)
			} else {
				fleet(w, r)
			}
			return
		}
		q := r.URL.Query()
		scope, err := single(r, "scope", "")
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		q.Del("scope")
		r.URL.RawQuery = q.Encode()
		switch {
		case scope == ScopeNode:
			node(w, r)
		case scope == ScopeFleet && s.deps.Fleet != nil:
			fleet(w, r)
		case scope == ScopeFleet:
			writeError(w, http.StatusBadRequest, "scope=fleet: fleet mode is off (logtally run --fleet URL)")
		default:
			writeError(w, http.StatusBadRequest, "scope must be node or fleet")
		}
	}
}

// fleetRendered returns the bodies made from the fleet's current View, or
// nil before the first.
func (s *Server) fleetRendered() *rendered {
	v := s.deps.Fleet.View()
	if v == nil {
		return nil
	}
	if c := s.fleetCache.Load(); c != nil && c.snap == &v.Window {
		return c
	}
	st := statsOf(&v.Window)
	st.AsOf = v.AsOf.UTC()
	c := &rendered{snap: &v.Window, asOf: st.AsOf, stats: newBody(st)}
	s.fleetCache.Store(c)
	return c
}

// live returns the bodies of the default scope: the fleet's in fleet mode
// (nil before its first View), else this node's.
func (s *Server) live() *rendered {
	if s.deps.Fleet == nil {
		return s.rendered()
	}
	return s.fleetRendered()
}

// liveSnapshot is the snapshot of the default scope, for the event stream.
func (s *Server) liveSnapshot() *logtally.Snapshot {
	if c := s.live(); c != nil {
		return c.snap
	}
	return nil
}

func noView(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, errNoView)
}

func (s *Server) fleetStats(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r, nil); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := s.fleetRendered()
	if c == nil {
		noView(w)
		return
	}
	s.serveBody(w, r, c.stats)
}

func (s *Server) fleetPages(w http.ResponseWriter, r *http.Request) {
	limit, err := pagesLimit(r, "limit")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := s.fleetRendered()
	if c == nil {
		noView(w)
		return
	}
	s.serveBody(w, r, c.pagesBody(limit))
}

// fleetSeries answers the default series (the last hour by minute) from
// the View, without a query; any other from the fleet database.
func (s *Server) fleetSeries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("from") || q.Has("to") || (q.Has("step") && q.Get("step") != "1m") {
		s.fleetHistory.series(w, r)
		return
	}
	if err := onlyParams(r, []string{"step"}); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, err := single(r, "step", "1m"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	v := s.deps.Fleet.View()
	if v == nil {
		noView(w)
		return
	}
	series := v.Series
	series.Step = time.Minute
	body := seriesBody(v.AsOf.Add(-DefaultSeriesSpan), v.AsOf, series)
	body.AsOf = v.AsOf.UTC()
	writeJSON(w, http.StatusOK, body)
}

// fleetPageCounts answers /pages/count from the fleet database, and the
// window's page views from the View.
func (s *Server) fleetPageCounts(w http.ResponseWriter, r *http.Request) {
	paths, err := countPaths(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	v := s.deps.Fleet.View()
	if v == nil {
		noView(w)
		return
	}
	counts, err := s.deps.Fleet.History.PathCounts(paths, s.deps.Now())
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	body := CountsBody{Pages: make([]PageCounts, len(counts)), AsOf: v.AsOf.UTC()}
	for i, c := range counts {
		live, _ := v.Window.PathViews(c.Path)
		body.Pages[i] = PageCounts{Path: c.Path, WindowPageViews: live, TodayPageViews: c.Day, TotalPageViews: c.Total}
	}
	writeJSON(w, http.StatusOK, body)
}

// unavailable answers 503 when the fleet database did not answer, and
// says so in the log without the details in the body.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, logtally.ErrTooManyPoints) {
		writeError(w, http.StatusBadRequest, "more than "+strconv.Itoa(logtally.MaxPoints)+" points: use a longer step or a shorter range")
		return
	}
	s.deps.Logger.Warn("api: fleet database", "path", r.URL.Path, "err", err)
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, errUnavailable)
}

// newFleetHistory returns the server that answers history queries other
// than the View's from the fleet database: this one's handlers over the
// fleet's History, whose errors are 503s.
func newFleetHistory(cfg Config, deps Deps) *Server {
	return &Server{cfg: cfg, deps: Deps{History: deps.Fleet.History, Now: deps.Now, Zone: deps.Zone, Logger: deps.Logger},
		fleetOnly: true}
}
