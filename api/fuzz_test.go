package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/prometheus/client_golang/prometheus"
)

// storeDouble answers the history endpoints as storage does at their
// edges: more than MaxPoints points is ErrTooManyPoints, and the first
// and last points are at the steps that hold from and to.
type storeDouble struct{}

func (storeDouble) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	first, last := from.Truncate(step), to.Truncate(step)
	if last.Sub(first)/step+1 > logtally.MaxPoints {
		return logtally.Series{}, logtally.ErrTooManyPoints
	}
	points := []logtally.Point{{Time: first, Requests: 1}}
	if last.After(first) {
		points = append(points, logtally.Point{Time: last, Requests: 2})
	}
	return logtally.Series{Step: step, Points: points}, nil
}

func (storeDouble) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	out := make([]logtally.PathCount, len(paths))
	for i, p := range paths {
		out[i] = logtally.PathCount{Path: p, Day: 1, Total: 2}
	}
	return out, nil
}

// fuzzServer is the API as the daemon builds it, every endpoint on, over
// doubles of the window, the store and the status.
func fuzzServer() *Server {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	snap := &logtally.Snapshot{From: now.Add(-10 * time.Minute), To: now, Length: 10 * time.Minute, Requests: 3,
		PageViews: 2, Visitors: 1, Pages: []logtally.PageCount{{Path: "/a", PageViews: 2}}}
	cfg := DefaultConfig()
	cfg.CORSOrigins = []string{"https://www.example.com"}
	return New(cfg, Deps{
		Snapshot:   func() *logtally.Snapshot { return snap },
		History:    storeDouble{},
		Status:     func() Status { return Status{Version: "dev", Started: now} },
		Metrics:    prometheus.NewRegistry(),
		Now:        func() time.Time { return now },
		Counters:   fakeCounters{hist: clickHistory{}, all: true},
		Breakdowns: fakeBreakdowns{counters: fakeCounters{hist: clickHistory{}, all: true}},
	})
}

// routes are the endpoints, and the methods each answers.
var routes = map[string][]string{
	"/api/v1/stats": {"GET", "HEAD"}, "/api/v1/pages": {"GET", "HEAD"}, "/api/v1/pages/count": {"GET", "HEAD"},
	"/api/v1/series": {"GET", "HEAD"}, "/api/v1/status": {"GET", "HEAD"}, "/healthz": {"GET", "HEAD"},
	"/readyz": {"GET", "HEAD"}, "/metrics": {"GET", "HEAD"}, "/api/v1/events": {"GET"}, "/": {"GET", "HEAD"},
	"/ui/dashboard.js": {"GET", "HEAD"}, "/ui/dashboard.css": {"GET", "HEAD"}, "/ui/widget.html": {"GET", "HEAD"},
	"/api/v1/sites": {"GET", "HEAD"}, "/api/v1/counters": {"GET", "HEAD"}, "/api/v1/counters/{name}": {"GET", "HEAD"},
	"/api/v1/counters/{name}/top": {"GET", "HEAD"}, "/api/v1/ratios/{name}/top": {"GET", "HEAD"},
	"/api/v1/breakdowns": {"GET", "HEAD"}, "/api/v1/breakdowns/{name}": {"GET", "HEAD"},
}

// publicRoutes are the routes of routes that the public listener serves
// too: the public figures, read-only.
var publicRoutes = map[string]bool{
	"/api/v1/stats": true, "/api/v1/pages": true, "/api/v1/pages/count": true, "/api/v1/series": true,
	"/api/v1/sites": true, "/api/v1/counters": true, "/api/v1/counters/{name}": true,
	"/api/v1/counters/{name}/top": true, "/api/v1/ratios/{name}/top": true, "/api/v1/events": true,
	"/ui/widget.html": true, "/api/v1/breakdowns": true, "/api/v1/breakdowns/{name}": true,
}

// route returns the route of routes that path is, and the name it gives
// ("" for a route without one): a segment of one byte or more.
func route(path string) (string, string) {
	for _, r := range []struct{ prefix, suffix string }{{"/api/v1/counters/", ""}, {"/api/v1/counters/", "/top"}, {"/api/v1/ratios/", "/top"},
		{"/api/v1/breakdowns/", ""}} {
		rest, ok := strings.CutPrefix(path, r.prefix)
		if !ok {
			continue
		}
		if name, ok := strings.CutSuffix(rest, r.suffix); ok && name != "" && !strings.Contains(name, "/") {
			return r.prefix + "{name}" + r.suffix, name
		}
	}
	return path, ""
}

// unknownName reports whether a request names, in its path or once in its
// query, a counter, ratio or site that fuzzServer does not have: a 404.
func unknownName(route, name string, q url.Values) bool {
	counters := []string{"show", "click"}
	switch route {
	case "/api/v1/counters/{name}", "/api/v1/counters/{name}/top":
		return !contains(counters, name)
	case "/api/v1/ratios/{name}/top":
		return name != "ctr"
	case "/api/v1/breakdowns/{name}":
		return name != "show"
	}
	if c := q["counter"]; len(c) == 1 && route == "/api/v1/series" && !contains(counters, c[0]) {
		return true
	}
	site := q["site"]
	return len(site) == 1 && site[0] != logtally.DefaultSite &&
		contains([]string{"/api/v1/stats", "/api/v1/pages", "/api/v1/pages/count", "/api/v1/series"}, route)
}

// FuzzAPI sends requests of any method, path and query string through
// the real router, as net/http would hand them to it: never a 500, never a
// stack trace or a path of this machine, and every error a JSON body with
// the status that the request calls for.
func FuzzAPI(f *testing.F) {
	seeds, err := os.ReadFile(filepath.Join("testdata", "requests.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(seeds), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := append(strings.Fields(line), "")
		f.Add(fields[0], fields[1], fields[2])
	}
	s := fuzzServer()
	defer s.Close()
	wd, _ := os.Getwd()
	internal := []string{"goroutine ", "panic", ".go:", runtime.GOROOT(), filepath.Dir(wd)}
	f.Fuzz(func(t *testing.T, method, path, query string) {
		target := path
		if query != "" {
			target += "?" + query
		}
		// What net/http would not read, it answers itself: no handler sees it.
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(
			method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n")))
		if err != nil || req.RequestURI == "*" {
			return
		}
		for _, l := range []Listener{Admin, Public} {
			checkAnswer(t, s.Handler(l), l, req, method, target, query, internal)
		}
	})
}

// checkAnswer sends req to listener l of the API, and checks the answer as
// FuzzAPI says.
func checkAnswer(t *testing.T, h http.Handler, l Listener, req *http.Request, method, target, query string, internal []string) {
	t.Helper()
	q, badQuery := url.ParseQuery(req.URL.RawQuery)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	code, body, ct := rec.Code, rec.Body.String(), rec.Header().Get("Content-Type")

	if code >= 500 {
		t.Fatalf("%s %s %q: %d %s", l, method, target, code, body)
	}
	// An error may echo the request; what the request holds is no leak.
	unescaped, _ := url.QueryUnescape(query)
	asked := method + " " + target + " " + req.URL.Path + " " + unescaped
	for _, s := range internal {
		if s != "" && s != "/" && strings.Contains(body, s) && !strings.Contains(asked, s) {
			t.Fatalf("%s %s %q: %d, the body shows %q: %s", l, method, target, code, s, body)
		}
	}
	if code >= 400 {
		var e ErrorBody
		if ct != "application/json" || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
			t.Fatalf("%s %s %q: %d %s %q: not a JSON error", l, method, target, code, ct, body)
		}
	}
	// The status the request calls for, found without the API's code.
	path, name := route(req.URL.Path)
	methods, routed := routes[path]
	if l == Public && !publicRoutes[path] {
		routed = false
	}
	switch {
	case code >= 300 && code < 400 && code != http.StatusNotModified:
		t.Fatalf("%s %s %q: %d %s: a redirect", l, method, target, code, body)
	case len(req.RequestURI) > MaxTarget:
		if code != http.StatusRequestURITooLong {
			t.Fatalf("%s %s %q: %d, want 414", l, method, target, code)
		}
	case badQuery != nil:
		if code != http.StatusBadRequest {
			t.Fatalf("%s %s %q: %d %s, want 400: %v", l, method, target, code, body, badQuery)
		}
	case !routed:
		if code != http.StatusNotFound {
			t.Fatalf("%s %s %q: %d %s, want 404", l, method, target, code, body)
		}
	case !contains(methods, method):
		if code != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s %q: %d %s, want 405", l, method, target, code, body)
		}
	case code == http.StatusNotFound && unknownName(path, name, q):
	case code >= 400 && code != http.StatusBadRequest:
		t.Fatalf("%s %s %q: %d %s, want 400 or a success", l, method, target, code, body)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
