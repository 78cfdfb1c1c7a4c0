package api

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/logtally/logtally"
)

// Breakdowns is what the API reads of the breakdowns (see package
// breakdown). Each breakdown on is counted as a named counter is, a site of
// its own whose paths are the breakdown's keys: its live window's Pages
// are its keys with their counts and distinct visitors, and its history's
// Pages the top keys of a range.
type Breakdowns interface {
	// BreakdownList returns every breakdown, in order, and whether it is
	// on.
	BreakdownList() []Breakdown
	// BreakdownSnapshot returns a breakdown's live window, and false for
	// one that is not on. It must not block.
	BreakdownSnapshot(name string) (*logtally.Snapshot, bool)
	// BreakdownHistory returns a breakdown's stored history, nil before
	// its first lines are committed. It implements PageHistory.
	BreakdownHistory(name string) History
}

// Breakdown is one breakdown as Breakdowns.BreakdownList lists it.
type Breakdown struct {
	Name string
	On   bool
	// PerRequest says that it counts every request (status, not-found),
	// not only page views.
	PerRequest bool
	// Off says why it is off, and how to turn it on; "" when on.
	Off string
}

// BreakdownsBody is the body of GET /api/v1/breakdowns: the breakdowns on,
// each with its live window, and the names of those off.
type BreakdownsBody struct {
	Breakdowns []BreakdownBody `json:"breakdowns"`
	Off        []string        `json:"off"`
}

// BreakdownBody is one breakdown on and its live window: the lines it
// counted (page views, or with counts "requests" every request), their
// distinct visitors, and how many keys.
type BreakdownBody struct {
	Name   string        `json:"name"`
	Counts string        `json:"counts"` // "page views" or "requests"
	Window CounterWindow `json:"window"`
}

// BreakdownKeysBody is the body of GET /api/v1/breakdowns/NAME: its top
// keys, as a counter's (KeysBody).
type BreakdownKeysBody struct {
	Breakdown string `json:"breakdown"`
	KeysBody
}

// errNoBreakdowns is the 404 of the breakdowns' endpoints where none are
// counted (fleet mode's view aside, this node's).
var errNoBreakdowns = notFound("no breakdowns are counted here (logtally run --breakdowns LIST)")

// breakdowns answers GET /api/v1/breakdowns.
func (s *Server) breakdowns(w http.ResponseWriter, r *request) error {
	if s.deps.Breakdowns == nil {
		return errNoBreakdowns
	}
	if err := r.only(); err != nil {
		return err
	}
	body := BreakdownsBody{Breakdowns: []BreakdownBody{}, Off: []string{}}
	for _, b := range s.deps.Breakdowns.BreakdownList() {
		if !b.On {
			body.Off = append(body.Off, b.Name)
			continue
		}
		bb := BreakdownBody{Name: b.Name, Counts: "page views"}
		if b.PerRequest {
			bb.Counts = "requests"
		}
		if snap, ok := s.deps.Breakdowns.BreakdownSnapshot(b.Name); ok && snap != nil {
			bb.Window = CounterWindow{Count: snap.Requests, Visitors: snap.Visitors, Keys: len(snap.Pages)}
		}
		body.Breakdowns = append(body.Breakdowns, bb)
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// breakdownTop answers GET /api/v1/breakdowns/NAME?limit=N[&from&to]: the
// top keys of the live window, with their distinct visitors, or of a range
// of days, with whether they are exact, as GET /api/v1/counters/NAME/top
// answers a counter.
func (s *Server) breakdownTop(w http.ResponseWriter, r *request) error {
	if s.deps.Breakdowns == nil {
		return errNoBreakdowns
	}
	if r.has("site") {
		return invalid("breakdowns count every site together, as named counters do: a site's are not counted apart; drop ?site=")
	}
	name := mux.Vars(r.Request)["name"]
	list := s.deps.Breakdowns.BreakdownList()
	i := slices.IndexFunc(list, func(b Breakdown) bool { return b.Name == name })
	switch {
	case i < 0:
		return notFound("no breakdown " + strconv.Quote(name) + ": GET /api/v1/breakdowns lists them")
	case !list[i].On:
		return notFound("breakdown " + name + " is off: " + list[i].Off)
	}
	snap, ok := s.deps.Breakdowns.BreakdownSnapshot(name)
	if !ok {
		return notFound("breakdown " + name + " is off: " + list[i].Off)
	}
	if snap == nil {
		snap = &logtally.Snapshot{}
	}
	keys, err := s.keysTop(r, snap, "breakdown", func() History { return s.deps.Breakdowns.BreakdownHistory(name) })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, BreakdownKeysBody{Breakdown: name, KeysBody: keys})
	return nil
}
