package api

import (
	"net/http"
	"time"

	"github.com/logtally/logtally"
)

// Limits on query parameters.
const (
	DefaultPagesLimit = 10
	MaxPagesLimit     = logtally.MaxPages
)

// Stats is the body of GET /api/v1/stats.
type Stats struct {
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	WindowSeconds int64     `json:"window_seconds"`
	Visitors      int64     `json:"visitors"`
	// Approximate is present, and true, when Visitors is an estimate: the
	// window holds more visitors than --max-visitors.
	Approximate bool  `json:"approximate,omitempty"`
	PageViews   int64 `json:"pageviews"`
	Requests    int64 `json:"requests"`
	Rejected    int64 `json:"rejected"` // lines rejected in the window
	// AsOf, in fleet mode, is when the fleet's counts were read: they are
	// at most this old. Absent from a node's own answers, which are live.
	AsOf time.Time `json:"as_of,omitzero"`
}

// Pages is the body of GET /api/v1/pages without from and to: the live
// window's top pages.
type Pages struct {
	From          time.Time            `json:"from"`
	To            time.Time            `json:"to"`
	WindowSeconds int64                `json:"window_seconds"`
	Pages         []logtally.PageCount `json:"pages"`
	AsOf          time.Time            `json:"as_of,omitzero"` // see Stats.AsOf
}

// stats answers GET /api/v1/stats: the live window's counts.
func (s *Server) stats(w http.ResponseWriter, r *request) error {
	src, err := s.source(r)
	if err != nil {
		return err
	}
	if err := r.only(); err != nil {
		return err
	}
	c, err := src.live()
	if err != nil {
		return err
	}
	s.serveBody(w, r.Request, c.stats)
	return nil
}

// pages answers GET /api/v1/pages: the live window's top pages, or with
// from and to a range's, from the history.
func (s *Server) pages(w http.ResponseWriter, r *request) error {
	src, err := s.source(r)
	if err != nil {
		return err
	}
	known := []string{"limit"}
	if src.rangedPages() {
		known = append(known, "from", "to")
	}
	limit, err := pagesLimit(r, known...)
	if err != nil {
		return err
	}
	if r.has("from") || r.has("to") {
		return s.historyPages(w, r, src, limit)
	}
	c, err := src.live()
	if err != nil {
		return err
	}
	s.serveBody(w, r.Request, c.pagesBody(limit))
	return nil
}

// pagesLimit reads the limit of /api/v1/pages, which may be given only
// the parameters named.
func pagesLimit(r *request, params ...string) (int, error) {
	if err := r.only(params...); err != nil {
		return 0, err
	}
	return r.intParam("limit", DefaultPagesLimit, 1, MaxPagesLimit)
}
