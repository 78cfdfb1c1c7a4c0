package api

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/logtally/logtally"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// body is a rendered answer with its entity tag.
type body struct {
	data []byte
	etag []string // one quoted entity tag, as a header value
}

func newBody(v any) *body {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // the bodies are plain structs; failing to encode them is a bug
	}
	data = append(data, '\n')
	h := fnv.New64a()
	h.Write(data)
	return &body{data: data, etag: []string{`"` + strconv.FormatUint(h.Sum64(), 36) + `"`}}
}

// rendered holds the bodies made from one snapshot. A poll between two
// publishes costs a pointer comparison and a write of bytes made once.
type rendered struct {
	snap   *logtally.Snapshot
	asOf   time.Time // when the fleet's View was read; zero for the node's own window
	stats  *body
	pages  sync.Map // limit -> *body
	events sync.Map // limit -> the event with limit pages, []byte
}

func (s *Server) rendered() *rendered {
	snap := s.deps.Snapshot()
	if c := s.cache.Load(); c != nil && c.snap == snap {
		return c
	}
	c := &rendered{snap: snap, stats: newBody(statsOf(snap))}
	s.cache.Store(c)
	return c
}

// statsOf is the body of /api/v1/stats for a snapshot.
func statsOf(snap *logtally.Snapshot) Stats {
	return Stats{
		From: snap.From, To: snap.To, WindowSeconds: int64(snap.Length / time.Second),
		Visitors: snap.Visitors, Approximate: snap.Approximate, PageViews: snap.PageViews,
		Requests: snap.Requests, Rejected: snap.Rejected,
	}
}

func (c *rendered) pagesBody(limit int) *body {
	if b, ok := c.pages.Load(limit); ok {
		return b.(*body)
	}
	snap := c.snap
	top := snap.Pages[:min(limit, len(snap.Pages))]
	if top == nil {
		top = []logtally.PageCount{} // an empty array, not null
	}
	b := newBody(Pages{From: snap.From, To: snap.To, WindowSeconds: int64(snap.Length / time.Second), Pages: top,
		AsOf: c.asOf})
	c.pages.Store(limit, b)
	return b
}

var (
	contentJSON = []string{"application/json"}
	varyOrigin  = []string{"Origin"}
)

// serveBody writes a cached body, or 304 when the client has it already.
func (s *Server) serveBody(w http.ResponseWriter, r *http.Request, b *body) {
	h := w.Header()
	h["Content-Type"] = contentJSON
	h["Cache-Control"] = s.cacheControl
	h["Etag"] = b.etag
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatch(inm, b.etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(len(b.data))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b.data)
	}
}

// etagMatch reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatch(values []string, etag string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}

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
			writeError(w, http.StatusForbidden, "origin "+origin+" may not read this API (allow it with --cors-origin)")
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

// routeMetrics counts API requests by route and status.
type routeMetrics struct {
	requests *prometheus.CounterVec
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

// counted wraps a handler so that its requests are counted under route.
func (s *Server) counted(route string, h http.HandlerFunc) http.HandlerFunc {
	if s.metrics == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
	}
}

// metricsHandler serves the registry in the Prometheus text format.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
