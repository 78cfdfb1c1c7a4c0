package api

import (
	"fmt"
	"sync/atomic"
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
	// Published returns a channel closed when the next View is published,
	// for the event stream. It must not be nil nor return nil: before the
	// fleet database is reached, its channel is closed when it is (see
	// fleet.Node.Published), so that the first View is told like any other.
	Published func() <-chan struct{}
	// Why, if not nil, says in a sentence safe to publish why the fleet's
	// counts are not known (the node's state: not reached yet, shipping
	// stopped and on what), for the 503 before the first View.
	Why func() string
}

const (
	errNoView      = "the fleet's counts have not been read yet (the fleet database has not answered since start); ?scope=node answers for this node"
	errNoViewWhy   = "the fleet's counts have not been read yet (%s); ?scope=node answers for this node"
	errUnavailable = "the fleet database did not answer; ?scope=node answers for this node"
)

// fleetSource answers from the fleet: the live window and the last hour
// from its View, the rest from its database.
type fleetSource struct {
	fleet *Fleet
	cache atomic.Pointer[rendered] // bodies of the current View
}

// live returns the bodies made from the fleet's current View, or a 503
// before the first.
func (f *fleetSource) live() (*rendered, error) {
	v := f.fleet.View()
	if v == nil {
		return nil, f.noView()
	}
	if c := f.cache.Load(); c != nil && c.snap == &v.Window {
		return c, nil
	}
	st := statsOf(&v.Window)
	st.AsOf = v.AsOf.UTC()
	c := &rendered{snap: &v.Window, asOf: st.AsOf, stats: newBody(st)}
	f.cache.Store(c)
	return c, nil
}

// noView is the 503 before the fleet's first View, saying why if the
// fleet can.
func (f *fleetSource) noView() error {
	if f.fleet.Why != nil {
		if why := f.fleet.Why(); why != "" {
			return unavailable(fmt.Sprintf(errNoViewWhy, why), time.Second)
		}
	}
	return unavailable(errNoView, time.Second)
}

func (f *fleetSource) history() (History, error) {
	if f.fleet.History == nil {
		return nil, notFound("no history is kept")
	}
	return f.fleet.History, nil
}

// historyError: the fleet database did not answer, which is said without
// its details, and logged.
func (f *fleetSource) historyError(err error) error {
	if e := tooManyPoints(err); e != nil {
		return e
	}
	return &Error{Code: CodeUnavailable, Message: errUnavailable, RetryAfter: 5 * time.Second,
		Err: fmt.Errorf("fleet database: %w", err)}
}

// rangedPages: the fleet answers pages of a range if its history does
// (fleet.Node's counts whole days of them).
func (f *fleetSource) rangedPages() bool {
	_, ok := f.fleet.History.(PageHistory)
	return ok
}

// recent answers the default series from the View, without a query.
func (f *fleetSource) recent() (SeriesBody, error) {
	v := f.fleet.View()
	if v == nil {
		return SeriesBody{}, f.noView()
	}
	series := v.Series
	series.Step = time.Minute
	body := seriesBody(v.AsOf.Add(-DefaultSeriesSpan), v.AsOf, series)
	body.AsOf = v.AsOf.UTC()
	return body, nil
}
