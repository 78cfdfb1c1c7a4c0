package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A handler answers a request: it writes an answer that succeeds itself,
// and returns an error for handle to write.
type handler func(w http.ResponseWriter, r *request) error

// endpoint is one route of the API.
type endpoint struct {
	path string
	h    handler
	// cost is the stored records a request reads, for the cap on heavy
	// queries; nil for an endpoint that is never heavy.
	cost cost
	// public puts the route on the public listener too: a public figure,
	// which anyone may read. The others are the operator's (see Listener).
	public bool
	// stream answers GET only: a HEAD of a stream would hold a connection
	// open for nothing.
	stream bool
}

// routes builds the routers of both listeners from one table: the admin
// listener serves every endpoint, the public one only those marked public.
// Every request goes through one chain:
//
//  1. chain: on the public listener, CORS (which answers a preflight
//     itself); on the admin listener, the token, if one is set (see
//     authorized); then the refusal of a request no endpoint could read
//     (see refused);
//  2. the listener's router: the endpoint by path and method, or a 404 or
//     405;
//  3. handle: the query parsed once into a request, the heavy-query cap
//     for an endpoint with a cost, the handler, the handler's error written
//     by writeError, and the answer counted by route and status.
//
// What a request answers for (?site=, ?scope=, ?counter=) is read by the
// handlers that take it, from the parsed query (see Server.source).
func (s *Server) routes() {
	endpoints := []endpoint{
		{path: "/api/v1/stats", h: s.stats, public: true},
		{path: "/api/v1/pages", h: s.pages, cost: s.pagesCost, public: true},
		{path: "/api/v1/pages/count", h: s.pageCounts, public: true},
		{path: "/api/v1/series", h: s.series, cost: s.seriesCost, public: true},
		{path: "/api/v1/sites", h: s.sitesList, public: true},
		{path: "/api/v1/counters", h: s.counters, public: true},
		{path: "/api/v1/counters/{name}", h: s.counterKeys, public: true},
		{path: "/api/v1/counters/{name}/top", h: s.counterTop, public: true},
		{path: "/api/v1/ratios/{name}/top", h: s.ratioTop, public: true},
		// Breakdowns are public figures as counters are. Their keys, as a
		// counter's captures, may be strings a client chose (a not-found
		// path, a utm value, a referring host): they are served as JSON
		// strings, escaped as logtally holds paths, never as markup, and
		// the breakdowns whose keys are wholly a client's (not-found,
		// utm-source, utm-campaign) are off unless the operator names them.
		{path: "/api/v1/breakdowns", h: s.breakdowns, public: true},
		{path: "/api/v1/breakdowns/{name}", h: s.breakdownTop, public: true},
		{path: "/api/v1/events", h: s.events, public: true, stream: true},
		{path: "/api/v1/status", h: s.status},
		{path: "/healthz", h: s.healthz},
		{path: "/readyz", h: s.readyz},
	}
	if s.deps.Metrics != nil {
		streams := map[string]bool{}
		for _, e := range endpoints {
			streams[e.path] = e.stream
		}
		s.metrics = newRequestMetrics(s.deps.Metrics, streams)
		endpoints = append(endpoints, endpoint{path: "/metrics", h: metricsHandler(s.deps.Metrics)})
	}
	if s.deps.Backup != nil {
		endpoints = append(endpoints, endpoint{path: "/api/v1/backup", h: s.backup})
	}
	if s.cfg.Dashboard {
		endpoints = append(endpoints, dashboard()...)
	}
	for _, e := range endpoints {
		s.table = append(s.table, Route{Path: e.path, Public: e.public, Stream: e.stream})
	}
	s.admin = s.chain(Admin, s.router(endpoints, func(endpoint) bool { return true }))
	s.public = s.chain(Public, s.router(endpoints, func(e endpoint) bool { return e.public }))
}

// Route is one endpoint as Routes lists it.
type Route struct {
	Path   string // as the router matches it: {name} stands for a name
	Public bool   // the public listener serves it too
	Stream bool   // an event stream: GET only, and it never ends by itself
}

// Routes returns every endpoint the admin listener serves, and which of
// them the public one serves: what a test walks to check each listener's
// answers, route by route, without a list of its own to go stale.
func (s *Server) Routes() []Route { return slices.Clone(s.table) }

// router routes the endpoints that serve says its listener serves; every
// other path is a JSON 404.
func (s *Server) router(endpoints []endpoint, serve func(endpoint) bool) *mux.Router {
	r := mux.NewRouter()
	// A path with // or .. names no endpoint: a JSON 404, rather than the
	// router's redirect to the cleaned path, with an empty body.
	r.SkipClean(true)
	for _, e := range endpoints {
		if !serve(e) {
			continue
		}
		methods := []string{http.MethodGet, http.MethodHead}
		if e.stream {
			methods = methods[:1]
		}
		r.Handle(e.path, s.handle(e.path, e.h, e.cost)).Methods(methods...)
	}
	r.NotFoundHandler = s.handle("unknown", func(w http.ResponseWriter, r *request) error {
		return notFound("no such endpoint: " + r.URL.Path)
	}, nil)
	r.MethodNotAllowedHandler = s.handle("method", func(w http.ResponseWriter, r *request) error {
		return &Error{Code: CodeMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path}
	}, nil)
	return r
}

// metricsHandler serves reg in the Prometheus text format.
func metricsHandler(reg *prometheus.Registry) handler {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return func(w http.ResponseWriter, r *request) error {
		h.ServeHTTP(w, r.Request)
		return nil
	}
}

// handle is the part of the chain that every route shares (see routes).
func (s *Server) handle(route string, h handler, cost cost) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		var sw *statusWriter
		var began time.Time
		if s.metrics != nil {
			sw, began = &statusWriter{ResponseWriter: w}, time.Now()
			w = sw
		}
		if err := s.serve(w, newRequest(hr), h, cost); err != nil {
			s.writeError(w, hr, err)
		}
		if sw != nil {
			s.metrics.observe(route, sw.status(), time.Since(began))
		}
	})
}

// serve runs h, holding one of the heavy queries' places while it runs
// when cost says the request is heavy.
func (s *Server) serve(w http.ResponseWriter, r *request, h handler, cost cost) error {
	if cost != nil {
		held, err := s.admit(r, cost)
		if err != nil {
			return err
		}
		if held {
			defer s.heavy.release()
		}
	}
	return h(w, r)
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the connection's writer, for the
// event stream's flushes and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// status is the status written, 200 if none was.
func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
