package api

import (
	"net/http"
	"strconv"

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
}

// routes registers every endpoint. Every request goes through one chain:
//
//  1. ServeHTTP: CORS (which answers a preflight itself), then the refusal
//     of a request no endpoint could read (see refused);
//  2. the router: the endpoint by path and method, or a 404 or 405;
//  3. handle: the query parsed once into a request, the heavy-query cap
//     for an endpoint with a cost, the handler, the handler's error written
//     by writeError, and the answer counted by route and status.
//
// What a request answers for (?site=, ?scope=, ?counter=) is read by the
// handlers that take it, from the parsed query (see Server.source).
func (s *Server) routes() {
	// A path with // or .. names no endpoint: a JSON 404, rather than the
	// router's redirect to the cleaned path, with an empty body.
	s.router.SkipClean(true)
	if s.deps.Metrics != nil {
		s.metrics = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logtally_api_requests_total", Help: "API requests by route and status.",
		}, []string{"route", "code"})
		s.deps.Metrics.MustRegister(s.metrics)
		s.router.Handle("/metrics", promhttp.HandlerFor(s.deps.Metrics, promhttp.HandlerOpts{})).
			Methods(http.MethodGet, http.MethodHead)
	}
	endpoints := []endpoint{
		{"/api/v1/stats", s.stats, nil},
		{"/api/v1/pages", s.pages, s.pagesCost},
		{"/api/v1/pages/count", s.pageCounts, nil},
		{"/api/v1/series", s.series, s.seriesCost},
		{"/api/v1/sites", s.sitesList, nil},
		{"/api/v1/counters", s.counters, nil},
		{"/api/v1/counters/{name}", s.counterKeys, nil},
		{"/api/v1/counters/{name}/top", s.counterTop, nil},
		{"/api/v1/ratios/{name}/top", s.ratioTop, nil},
		{"/api/v1/status", s.status, nil},
		{"/healthz", s.healthz, nil},
		{"/readyz", s.readyz, nil},
	}
	if s.cfg.Dashboard {
		endpoints = append(endpoints, dashboard()...)
	}
	for _, e := range endpoints {
		s.router.Handle(e.path, s.handle(e.path, e.h, e.cost)).Methods(http.MethodGet, http.MethodHead)
	}
	s.router.Handle("/api/v1/events", s.handle("/api/v1/events", s.events, nil)).Methods(http.MethodGet)
	s.router.NotFoundHandler = s.handle("unknown", func(w http.ResponseWriter, r *request) error {
		return notFound("no such endpoint: " + r.URL.Path)
	}, nil)
	s.router.MethodNotAllowedHandler = s.handle("method", func(w http.ResponseWriter, r *request) error {
		return &Error{Code: CodeMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path}
	}, nil)
}

// handle is the part of the chain that every route shares (see routes).
func (s *Server) handle(route string, h handler, cost cost) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		var sw *statusWriter
		if s.metrics != nil {
			sw = &statusWriter{ResponseWriter: w}
			w = sw
		}
		if err := s.serve(w, newRequest(hr), h, cost); err != nil {
			s.writeError(w, hr, err)
		}
		if sw != nil {
			s.count(route, sw.status())
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

// count counts a request under route with the status it was answered.
func (s *Server) count(route string, status int) {
	if s.metrics != nil {
		s.metrics.WithLabelValues(route, strconv.Itoa(status)).Inc()
	}
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

var varyOrigin = []string{"Origin"}

// cors adds the CORS headers for an allowed origin, and answers preflight
// requests itself: 204 with the CORS headers for an allowed origin, and a
// JSON 403 that says so for any other, rather than the 405 an OPTIONS
// request would get from the router, which looks like a routing mistake.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) (done bool) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	allowed := ""
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" {
			allowed = "*"
			break
		}
		if o == origin {
			allowed = origin
			break
		}
	}
	if allowed == "" {
		if preflight {
			s.writeError(w, r, &Error{Code: CodeForbidden,
				Message: "origin " + origin + " may not read this API (allow it with --cors-origin)"})
			return true
		}
		return false
	}
	h := w.Header()
	h["Access-Control-Allow-Origin"] = []string{allowed}
	h["Vary"] = varyOrigin
	if preflight {
		h["Access-Control-Allow-Methods"] = []string{"GET, HEAD, OPTIONS"}
		h["Access-Control-Allow-Headers"] = []string{"If-None-Match"}
		h["Access-Control-Max-Age"] = []string{"600"}
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	h["Access-Control-Expose-Headers"] = []string{"ETag"}
	return false
}
