package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

func testServer() *Server {
	snap := &logtally.Snapshot{
		From: time.Date(2026, 11, 21, 11, 50, 1, 0, time.UTC), To: time.Date(2026, 11, 21, 12, 0, 1, 0, time.UTC),
		Length: 10 * time.Minute, Requests: 9, PageViews: 5, Visitors: 2,
		Pages: []logtally.PageCount{{Path: "/a", PageViews: 3}, {Path: "/b", PageViews: 2}},
	}
	return New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }})
}

func TestEndpoints(t *testing.T) {
	s := testServer()
	tests := []struct {
		method, target string
		status         int
		body           string
	}{
		{"GET", "/api/v1/stats", 200, `{"from":"2026-11-21T11:50:01Z","to":"2026-11-21T12:00:01Z","window_seconds":600,"visitors":2,"pageviews":5,"requests":9,"rejected":0}`},
		{"GET", "/api/v1/pages", 200, `{"from":"2026-11-21T11:50:01Z","to":"2026-11-21T12:00:01Z","window_seconds":600,"pages":[{"path":"/a","pageviews":3},{"path":"/b","pageviews":2}]}`},
		{"GET", "/api/v1/pages?limit=1", 200, `{"from":"2026-11-21T11:50:01Z","to":"2026-11-21T12:00:01Z","window_seconds":600,"pages":[{"path":"/a","pageviews":3}]}`},
		{"GET", "/api/v1/pages?limit=0", 400, `{"error":"limit must be an integer from 1 to 1000"}`},
		{"GET", "/api/v1/pages?limit=1001", 400, `{"error":"limit must be an integer from 1 to 1000"}`},
		{"GET", "/api/v1/pages?limit=x", 400, `{"error":"limit must be an integer from 1 to 1000"}`},
		{"GET", "/api/v1/pages?limit=1&limit=2", 400, `{"error":"limit given more than once"}`},
		{"GET", "/api/v1/stats?foo=1", 400, `{"error":"unknown query parameter \"foo\""}`},
		{"GET", "/api/v1/nope", 404, `{"error":"no such endpoint: /api/v1/nope"}`},
		{"POST", "/api/v1/stats", 405, `{"error":"method POST not allowed on /api/v1/stats"}`},
		{"GET", "/healthz", 200, `{"status":"ok"}`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
			if rec.Code != tt.status {
				t.Errorf("status = %d, want %d", rec.Code, tt.status)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if got := rec.Body.String(); got != tt.body+"\n" {
				t.Errorf("body = %s\nwant   %s", got, tt.body)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Error("body is not JSON")
			}
		})
	}
}

func TestEmptyPagesIsArray(t *testing.T) {
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{Length: time.Minute} }})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pages", nil))
	var body struct{ Pages []logtally.PageCount }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Pages == nil {
		t.Fatalf("pages = %s, want an empty array", rec.Body)
	}
}

func TestApproximateVisitors(t *testing.T) {
	snap := &logtally.Snapshot{Length: time.Minute, Visitors: 5_123_456, Approximate: true, Rejected: 3}
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/stats", nil))
	want := `{"from":"0001-01-01T00:00:00Z","to":"0001-01-01T00:00:00Z","window_seconds":60,"visitors":5123456,"approximate":true,"pageviews":0,"requests":0,"rejected":3}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}
