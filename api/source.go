package api

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
)

// A source is what /api/v1/stats, /pages, /pages/count and /series answer
// from: this node's live window and store (a nodeSource), or in fleet mode
// the whole fleet's View and database (a fleetSource). The handlers are
// written once, against this interface; where the two differ, the
// difference is a method here.
type source interface {
	// live returns the bodies made from the live window's latest state,
	// or an error when there is none yet.
	live() (*rendered, error)
	// history returns the stored history, or an error when none is kept.
	history() (History, error)
	// historyError is what an error of the history's is to the client.
	historyError(err error) error
	// rangedPages reports whether /api/v1/pages answers from and to from
	// the history, rather than refusing them as unknown parameters.
	rangedPages() bool
}

// A recentSource holds the default series, the last hour by minute,
// without reading its history: the fleet's View does.
type recentSource interface {
	recent() (SeriesBody, error)
}

// nodeSource answers from this node's counts: all of them, one site's or
// one counter's.
type nodeSource struct {
	snapshot func() *logtally.Snapshot
	hist     History // nil when none is kept, or not stored yet
	// part is what a site's or counter's source answers for, "site" or
	// "counter", whose history, when nil, is not stored yet; "" for all
	// the daemon counts, which keeps none.
	part  string
	cache atomic.Pointer[rendered]
}

func (n *nodeSource) live() (*rendered, error) {
	snap := n.snapshot()
	if c := n.cache.Load(); c != nil && c.snap == snap {
		return c, nil
	}
	c := &rendered{snap: snap, stats: newBody(statsOf(snap))}
	n.cache.Store(c)
	return c, nil
}

func (n *nodeSource) history() (History, error) {
	switch {
	case n.hist != nil:
		return n.hist, nil
	case n.part != "":
		return nil, notStoredYet(n.part)
	}
	return nil, notFound("no history is kept")
}

// historyError: this node's store failed, which is internal.
func (n *nodeSource) historyError(err error) error {
	if e := tooManyPoints(err); e != nil {
		return e
	}
	return err
}

func (n *nodeSource) rangedPages() bool { return true }

// notStoredYet answers a history query for a site or counter (part)
// counted but not stored yet: its first lines are committed within a
// flush interval.
func notStoredYet(part string) error {
	return unavailable("the "+part+"'s first lines are not stored yet; ask again in a second", time.Second)
}

// tooManyPoints is the 400 of a history's ErrTooManyPoints (asking for
// more than MaxPoints is the request's fault), and nil for another error.
func tooManyPoints(err error) *Error {
	if errors.Is(err, logtally.ErrTooManyPoints) {
		return invalid("more than " + strconv.Itoa(logtally.MaxPoints) + " points: use a longer step or a shorter range")
	}
	return nil
}

// Scopes of the ?scope= parameter.
const (
	ScopeFleet = "fleet" // the whole fleet: the default in fleet mode
	ScopeNode  = "node"  // this node alone: the only scope without fleet mode
)

// part is what a request answers for: all the daemon counts, one site or
// one counter; from this node, and in fleet mode from the fleet.
type part struct {
	node  *nodeSource
	fleet *fleetSource // nil without fleet mode
}

// scope returns the source of the scope a request names (?scope=, taken
// out of its query): by default the fleet's in fleet mode, else this
// node's.
func (p *part) scope(r *request) (source, error) {
	scope, given, err := r.take("scope")
	switch {
	case err != nil:
		return nil, err
	case !given && p.fleet == nil, scope == ScopeNode:
		return p.node, nil
	case !given, scope == ScopeFleet && p.fleet != nil:
		return p.fleet, nil
	case scope == ScopeFleet:
		return nil, invalid("scope=fleet: fleet mode is off (logtally run --fleet URL)")
	}
	return nil, invalid("scope must be node or fleet")
}

// byDefault is the source of a request that names no scope.
func (p *part) byDefault() source {
	if p.fleet != nil {
		return p.fleet
	}
	return p.node
}

// source returns what a request to /stats, /pages, /pages/count or /series
// answers from: the site it names, if any (?site=), in the scope it names.
func (s *Server) source(r *request) (source, error) {
	name, given, err := r.take("site")
	if err != nil {
		return nil, err
	}
	p := &s.own
	if given {
		var ok bool
		if p, ok = s.site(name); !ok {
			return nil, notFound("no site " + strconv.Quote(name) + ": GET /api/v1/sites lists the sites counted")
		}
	}
	return p.scope(r)
}
