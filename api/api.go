// Package api serves logtally's JSON API.
//
// The hot endpoints answer from the window's last published snapshot, so a
// request never waits on ingest and costs the same however fast lines come
// in. Every error, including unknown paths and wrong methods, is a JSON body
// with the matching status; internals never leak into it.
package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/window"
)

// Limits on query parameters.
const (
	DefaultPagesLimit = 10
	MaxPagesLimit     = window.MaxPages
)

// ErrBadRequest is the class of errors caused by a bad query value; the API
// answers them with 400.
var ErrBadRequest = errors.New("bad request")

// Config configures the API handler.
type Config struct {
	// Snapshot returns the window's latest snapshot; it must not block.
	Snapshot func() *window.Snapshot
	// History answers the history endpoints; nil disables them.
	History History
	// Ready reports why the daemon cannot make progress (for example, the
	// store is not writable), or nil when it can.
	Ready  func() error
	Now    func() time.Time // for "today"; time.Now if nil
	Logger *slog.Logger
}

// History is the stored data the history endpoints read: *storage.Store.
type History interface {
	Series(from, to time.Time, step time.Duration) (storage.Series, error)
	PathCounts(paths []string, day time.Time) ([]storage.PathCount, error)
}

// Server is the API's HTTP handler.
type Server struct {
	cfg    Config
	router *mux.Router
}

// New returns the API handler.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Ready == nil {
		cfg.Ready = func() error { return nil }
	}
	s := &Server{cfg: cfg, router: mux.NewRouter()}
	s.router.HandleFunc("/api/v1/stats", s.stats).Methods(http.MethodGet, http.MethodHead)
	s.router.HandleFunc("/api/v1/pages", s.pages).Methods(http.MethodGet, http.MethodHead)
	s.router.HandleFunc("/api/v1/pages/count", s.pageCounts).Methods(http.MethodGet, http.MethodHead)
	s.router.HandleFunc("/api/v1/series", s.series).Methods(http.MethodGet, http.MethodHead)
	s.router.HandleFunc("/healthz", s.healthz).Methods(http.MethodGet, http.MethodHead)
	s.router.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet, http.MethodHead)
	s.router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	s.router.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

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
}

// Pages is the body of GET /api/v1/pages.
type Pages struct {
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	WindowSeconds int64     `json:"window_seconds"`
	Pages         []Page    `json:"pages"`
}

// Page is one row of Pages.
type Page struct {
	Path      string `json:"path"`
	PageViews int64  `json:"pageviews"`
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r, nil); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	snap := s.cfg.Snapshot()
	writeJSON(w, http.StatusOK, Stats{
		From: snap.From, To: snap.To, WindowSeconds: int64(snap.Length / time.Second),
		Visitors: snap.Visitors, Approximate: snap.Approximate, PageViews: snap.PageViews,
		Requests: snap.Requests, Rejected: snap.Rejected,
	})
}

func (s *Server) pages(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r, []string{"limit"}); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit, err := intParam(r, "limit", DefaultPagesLimit, 1, MaxPagesLimit)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	snap := s.cfg.Snapshot()
	top := snap.Pages[:min(limit, len(snap.Pages))]
	body := Pages{From: snap.From, To: snap.To, WindowSeconds: int64(snap.Length / time.Second),
		Pages: make([]Page, len(top))}
	for i, p := range top {
		body.Pages[i] = Page{Path: p.Path, PageViews: p.PageViews}
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Ready(); err != nil {
		writeError(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// onlyParams rejects query parameters the endpoint does not know, so that a
// typo is an error rather than silently ignored.
func onlyParams(r *http.Request, known []string) error {
	for name := range r.URL.Query() {
		ok := false
		for _, k := range known {
			ok = ok || name == k
		}
		if !ok {
			return errors.New("unknown query parameter " + strconv.Quote(name))
		}
	}
	return nil
}

// intParam reads an optional integer parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return def, nil
	}
	if len(q[name]) > 1 {
		return 0, errors.New(name + " given more than once")
	}
	n, err := strconv.Atoi(q.Get(name))
	if err != nil || n < lo || n > hi {
		return 0, errors.New(name + " must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi))
	}
	return n, nil
}

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, Error{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
