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
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/logtally/logtally"
	"github.com/prometheus/client_golang/prometheus"
)

// Limits on query parameters.
const (
	DefaultPagesLimit = 10
	MaxPagesLimit     = logtally.MaxPages
)

// Config is the API's operator settings.
type Config struct {
	CacheMaxAge time.Duration // Cache-Control max-age of the live endpoints; 0 for no-cache
	CORSOrigins []string      // origins allowed to read the API from a browser; "*" for any
	Dashboard   bool          // serve the dashboard page at /
	MaxStreams  int           // most event streams open at once; 0 turns /api/v1/events off
	// StreamSendTimeout is how long one event may take to reach a client
	// before the client is dropped.
	StreamSendTimeout time.Duration
	// MaxHeavy is the most heavy history queries answered at once (see
	// HeavyReads); more get 429. 0 takes DefaultMaxHeavy.
	MaxHeavy int
}

// DefaultConfig returns the defaults: the live endpoints may be reused for
// 5 seconds, no other origin may read the API, the dashboard is served,
// up to 1,000 event streams, and 4 heavy history queries at once.
func DefaultConfig() Config {
	return Config{CacheMaxAge: 5 * time.Second, Dashboard: true, MaxStreams: DefaultMaxStreams,
		StreamSendTimeout: DefaultStreamSendTimeout, MaxHeavy: DefaultMaxHeavy}
}

// RegisterFlags sets c to the defaults and registers the API's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.DurationVar(&c.CacheMaxAge, "cache-max-age", c.CacheMaxAge,
		"Cache-Control max-age of /api/v1/stats and /api/v1/pages (0 for no-cache)")
	fs.Func("cors-origin", "`origin` allowed to read the API from a browser (repeat, or comma-separated; * for any)",
		func(v string) error {
			for _, o := range strings.Split(v, ",") {
				if o = strings.TrimSpace(o); o != "" {
					c.CORSOrigins = append(c.CORSOrigins, o)
				}
			}
			return nil
		})
	fs.BoolVar(&c.Dashboard, "dashboard", c.Dashboard, "serve the dashboard page at / (--dashboard=false turns it off)")
	fs.IntVar(&c.MaxStreams, "max-streams", c.MaxStreams,
		"most clients of the live event stream /api/v1/events at once; more get 503 (0 turns the stream off)")
	fs.IntVar(&c.MaxHeavy, "max-heavy-queries", c.MaxHeavy,
		"most heavy history queries (more than 6 hours of minutes) answered at once; more get 429")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	if c.CacheMaxAge < 0 {
		return fmt.Errorf("cache max age %s: must not be negative", c.CacheMaxAge)
	}
	if c.MaxStreams < 0 {
		return fmt.Errorf("max streams %d: must not be negative", c.MaxStreams)
	}
	if c.MaxHeavy < 0 {
		return fmt.Errorf("max heavy queries %d: must not be negative", c.MaxHeavy)
	}
	return nil
}

// Deps are what the API reads: small interfaces, so that it can answer
// from any store that gives the same answers.
type Deps struct {
	// Snapshot returns the window's latest snapshot; it must not block.
	Snapshot func() *logtally.Snapshot
	// History answers the history endpoints; nil disables them.
	History History
	// Ready reports why the daemon cannot make progress (for example, the
	// store is not writable), or nil when it can; always ready if nil.
	Ready func() error
	// Status reports the daemon's state for /api/v1/status; nil answers 404.
	Status func() Status
	// Metrics, if set, is served at /metrics, and API requests are counted
	// in it by route and status.
	Metrics *prometheus.Registry
	Now     func() time.Time // for "today"; time.Now if nil
	// Zone is the zone of the store's days: a plain date in from or to is a
	// day there. UTC if nil.
	Zone   *time.Location
	Logger *slog.Logger // discards if nil
	// Fleet, in fleet mode, is what the API answers from by default; nil
	// without fleet mode. See Fleet.
	Fleet *Fleet
	// Sites, with several sites, answers ?site= and /api/v1/sites; then
	// Snapshot and History are of all sites together. See Sites.
	Sites Sites
	// Counters, when counters are declared, answers /api/v1/counters,
	// /api/v1/ratios and /api/v1/series?counter=; nil answers 404 there.
	Counters Counters
}

// History is the stored data the history endpoints read: a storage.Store,
// or any store that answers the same.
type History interface {
	Series(from, to time.Time, step time.Duration) (logtally.Series, error)
	PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error)
}

// PageHistory is what GET /api/v1/pages?from=T&to=T reads: the top pages
// of any range. A History that also implements it answers that endpoint;
// with one that does not, it answers 404.
type PageHistory interface {
	Pages(from, to time.Time, limit int) (logtally.PageRange, error)
}

// Server is the API's HTTP handler.
type Server struct {
	cfg          Config
	deps         Deps
	router       *mux.Router
	cache        atomic.Pointer[rendered]
	cacheControl []string
	metrics      *routeMetrics
	streams      *streams // nil when the event stream is off
	heavy        *heavy   // caps the heavy history queries

	fleetCache   atomic.Pointer[rendered] // bodies of the fleet's current View
	fleetHistory *Server                  // answers history from the fleet database; nil without fleet mode
	fleetOnly    bool                     // this is a fleetHistory: errors are the database's, 503

	sites siteServers // the Servers of ?site=
	part  string      // what a ?site= or ?counter= Server answers for, "site" or "counter"; "" for the daemon's
}

// New returns the API handler.
func New(cfg Config, deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Zone == nil {
		deps.Zone = time.UTC
	}
	if deps.Ready == nil {
		deps.Ready = func() error { return nil }
	}
	if cfg.StreamSendTimeout <= 0 {
		cfg.StreamSendTimeout = DefaultStreamSendTimeout
	}
	if cfg.MaxHeavy <= 0 {
		cfg.MaxHeavy = DefaultMaxHeavy
	}
	s := &Server{cfg: cfg, deps: deps, router: mux.NewRouter()}
	// A path with // or .. names no endpoint: a JSON 404, rather than the
	// router's redirect to the cleaned path, with an empty body.
	s.router.SkipClean(true)
	s.cacheControl = []string{"no-cache"}
	if age := int(cfg.CacheMaxAge / time.Second); age > 0 {
		s.cacheControl = []string{"public, max-age=" + strconv.Itoa(age)}
	}
	if deps.Metrics != nil {
		s.metrics = &routeMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logtally_api_requests_total", Help: "API requests by route and status.",
		}, []string{"route", "code"})}
		deps.Metrics.MustRegister(s.metrics.requests)
		s.router.Handle("/metrics", metricsHandler(deps.Metrics)).Methods(http.MethodGet, http.MethodHead)
	}
	s.heavy = newHeavy(cfg.MaxHeavy, deps.Logger, deps.Metrics)
	get := func(path string, h http.HandlerFunc) {
		s.router.HandleFunc(path, s.counted(path, h)).Methods(http.MethodGet, http.MethodHead)
	}
	if deps.Fleet != nil {
		s.fleetHistory = newFleetHistory(cfg, deps)
	}
	// ?site= answers for one site: in fleet mode, from the fleet database
	// (see Fleet.Site).
	get("/api/v1/stats", s.sited(func(s *Server) http.HandlerFunc { return s.scoped(s.stats, s.fleetStats) }))
	get("/api/v1/pages", s.limited(s.pagesCost, s.sited(func(s *Server) http.HandlerFunc { return s.scoped(s.pages, s.fleetPages) })))
	get("/api/v1/pages/count", s.sited(func(s *Server) http.HandlerFunc { return s.scoped(s.pageCounts, s.fleetPageCounts) }))
	get("/api/v1/series", s.limited(s.seriesCost, s.countered(s.sited(func(s *Server) http.HandlerFunc { return s.scoped(s.series, s.fleetSeries) }))))
	get("/api/v1/sites", s.sitesList)
	get("/api/v1/counters", s.counters)
	get("/api/v1/counters/{name}", s.counterKeys)
	get("/api/v1/counters/{name}/top", s.counterTop)
	get("/api/v1/ratios/{name}/top", s.ratioTop)
	get("/api/v1/status", s.status)
	get("/healthz", s.healthz)
	get("/readyz", s.readyz)
	if cfg.MaxStreams > 0 {
		s.streams = newStreams(cfg.MaxStreams, s.liveSnapshot, func() {
			if c := s.live(); c != nil {
				c.eventBody(DefaultPagesLimit)
			}
		})
	}
	s.router.HandleFunc("/api/v1/events", s.counted("/api/v1/events", s.events)).Methods(http.MethodGet)
	if cfg.Dashboard {
		s.dashboard(get)
	}
	s.router.NotFoundHandler = s.counted("unknown", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	s.router.MethodNotAllowedHandler = s.counted("method", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) || s.refuse(w, r) {
		return
	}
	s.router.ServeHTTP(w, r)
}

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

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		if err := onlyParams(r, nil); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	s.serveBody(w, r, s.rendered().stats)
}

// pagesLimit reads the limit of /api/v1/pages, which may be given only
// the parameters named.
func pagesLimit(r *http.Request, params ...string) (int, error) {
	if err := onlyParams(r, params); err != nil {
		return 0, err
	}
	return intParam(r, "limit", DefaultPagesLimit, 1, MaxPagesLimit)
}

func (s *Server) pages(w http.ResponseWriter, r *http.Request) {
	limit, err := pagesLimit(r, "limit", "from", "to")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if q := r.URL.Query(); q.Has("from") || q.Has("to") {
		s.historyPages(w, r, limit)
		return
	}
	s.serveBody(w, r, s.rendered().pagesBody(limit))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.deps.Ready(); err != nil {
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
