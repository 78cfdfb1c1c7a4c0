package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

func do(s http.Handler, method, target string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func TestETagAndCacheControl(t *testing.T) {
	var snap atomic.Pointer[logtally.Snapshot]
	snap.Store(&logtally.Snapshot{Length: time.Minute, Requests: 1})
	s := New(Config{CacheMaxAge: 5 * time.Second}, Deps{Snapshot: snap.Load})

	first := do(s, "GET", "/api/v1/stats", nil)
	etag := first.Header().Get("ETag")
	if first.Code != 200 || etag == "" || first.Header().Get("Cache-Control") != "public, max-age=5" {
		t.Fatalf("first: %d etag %q cache-control %q", first.Code, etag, first.Header().Get("Cache-Control"))
	}
	again := do(s, "GET", "/api/v1/stats", map[string]string{"If-None-Match": etag})
	if again.Code != http.StatusNotModified || again.Body.Len() != 0 || again.Header().Get("ETag") != etag {
		t.Errorf("same snapshot with If-None-Match: %d, %d bytes", again.Code, again.Body.Len())
	}
	if r := do(s, "GET", "/api/v1/stats", map[string]string{"If-None-Match": `"other", W/` + etag}); r.Code != 304 {
		t.Errorf("etag in a list, weak: %d, want 304", r.Code)
	}

	snap.Store(&logtally.Snapshot{Length: time.Minute, Requests: 2}) // a new publish
	changed := do(s, "GET", "/api/v1/stats", map[string]string{"If-None-Match": etag})
	if changed.Code != 200 || changed.Header().Get("ETag") == etag || !strings.Contains(changed.Body.String(), `"requests":2`) {
		t.Errorf("after a publish: %d etag %q body %s", changed.Code, changed.Header().Get("ETag"), changed.Body)
	}

	p1 := do(s, "GET", "/api/v1/pages?limit=5", nil)
	p2 := do(s, "GET", "/api/v1/pages?limit=5", map[string]string{"If-None-Match": p1.Header().Get("ETag")})
	if p1.Code != 200 || p2.Code != 304 {
		t.Errorf("pages: %d then %d, want 200 then 304", p1.Code, p2.Code)
	}
	if head := do(s, "HEAD", "/api/v1/stats", nil); head.Code != 200 || head.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes", head.Code, head.Body.Len())
	}

	noCache := New(Config{}, Deps{Snapshot: snap.Load})
	if cc := do(noCache, "GET", "/api/v1/stats", nil).Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("max-age 0: Cache-Control %q, want no-cache", cc)
	}
}

// TestCORS: the public listener sends the CORS headers of an allowed
// origin and answers its preflights; the admin listener never does.
func TestCORS(t *testing.T) {
	snap := &logtally.Snapshot{Length: time.Minute}
	s := New(Config{CORSOrigins: []string{"https://example.com"}},
		Deps{Snapshot: func() *logtally.Snapshot { return snap }})
	public := s.Handler(Public)
	tests := []struct {
		name, method, origin, reqMethod string
		status                          int
		allow                           string
	}{
		{"allowed origin", "GET", "https://example.com", "", 200, "https://example.com"},
		{"other origin", "GET", "https://evil.example", "", 200, ""},
		{"no origin", "GET", "", "", 200, ""},
		{"preflight", "OPTIONS", "https://example.com", "GET", 204, "https://example.com"},
		{"preflight from another origin", "OPTIONS", "https://evil.example", "GET", 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.origin != "" {
				h["Origin"] = tt.origin
			}
			if tt.reqMethod != "" {
				h["Access-Control-Request-Method"] = tt.reqMethod
			}
			if rec := do(s.Handler(Admin), tt.method, "/api/v1/stats", h); len(corsHeaders(rec.Header())) > 0 {
				t.Errorf("the admin listener sent %v", corsHeaders(rec.Header()))
			}
			rec := do(public, tt.method, "/api/v1/stats", h)
			if rec.Code != tt.status || rec.Header().Get("Access-Control-Allow-Origin") != tt.allow {
				t.Errorf("got %d allow-origin %q; want %d %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"), tt.status, tt.allow)
			}
			if tt.method == "OPTIONS" && tt.status == 204 && rec.Header().Get("Access-Control-Allow-Methods") == "" {
				t.Error("preflight without Access-Control-Allow-Methods")
			}
		})
	}
	any := New(Config{CORSOrigins: []string{"*"}}, Deps{Snapshot: func() *logtally.Snapshot { return snap }})
	if got := do(any.Handler(Public), "GET", "/api/v1/stats", map[string]string{"Origin": "https://a.example"}).Header().Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("*: allow-origin %q", got)
	}
}

// corsHeaders returns the CORS headers of h.
func corsHeaders(h http.Header) []string {
	var names []string
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") || k == "Vary" {
			names = append(names, k)
		}
	}
	return names
}

func TestMetricsParse(t *testing.T) {
	reg := prometheus.NewRegistry()
	snap := &logtally.Snapshot{Length: time.Minute}
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }, Metrics: reg})
	do(s, "GET", "/api/v1/stats", nil)
	do(s, "GET", "/api/v1/stats", nil)
	do(s, "GET", "/api/v1/pages?limit=0", nil)
	do(s, "GET", "/nope", nil)
	rec := do(s, "GET", "/metrics", nil)
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	got := map[string]float64{}
	for _, m := range families["logtally_api_requests_total"].GetMetric() {
		var route, code string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "route":
				route = l.GetValue()
			case "code":
				code = l.GetValue()
			}
		}
		got[route+" "+code] = m.GetCounter().GetValue()
	}
	want := map[string]float64{"/api/v1/stats 200": 2, "/api/v1/pages 400": 1, "unknown 404": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("requests{%s} = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func TestStatus(t *testing.T) {
	snap := &logtally.Snapshot{Length: time.Minute}
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }, Status: func() Status {
		return Status{Version: "test", Lines: LineStatus{Read: 3, Parsed: 2, Rejected: 1, ByReason: map[string]int64{"bad timestamp": 1}},
			Samples: []RejectedSample{{Reason: "bad timestamp", Line: "x"}}, Store: StoreStatus{State: "ok"}}
	}})
	rec := do(s, "GET", "/api/v1/status", nil)
	for _, want := range []string{`"version":"test"`, `"files":[]`, `"read":3`, `"rejected_by_reason":{"bad timestamp":1}`, `"line":"x"`, `"state":"ok"`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("status body lacks %s: %s", want, rec.Body)
		}
	}
	if r := do(s, "GET", "/api/v1/status?x=1", nil); r.Code != 400 {
		t.Errorf("unknown parameter: %d", r.Code)
	}
}

// BenchmarkStatsPoll is one poll of /api/v1/stats between two publishes:
// it should cost about as much as writing the cached body.
func BenchmarkStatsPoll(b *testing.B) {
	snap := &logtally.Snapshot{Length: 10 * time.Minute, Requests: 12345, PageViews: 678, Visitors: 90}
	s := New(Config{CacheMaxAge: 5 * time.Second}, Deps{Snapshot: func() *logtally.Snapshot { return snap }})
	req := httptest.NewRequest("GET", "/api/v1/stats", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		s.ServeHTTP(w, req)
	}
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
