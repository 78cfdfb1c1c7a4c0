package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// fleetServer serves a node whose own window holds 9 requests, in a fleet
// whose View (once stored in view) holds 90.
func fleetServer(h *history, view *publisher[logtally.View]) *Server {
	local := &logtally.Snapshot{From: time.Unix(1000, 0).UTC(), To: time.Unix(1600, 0).UTC(), Length: 10 * time.Minute,
		Requests: 9, PageViews: 5, Visitors: 2, Pages: []logtally.PageCount{{Path: "/a", PageViews: 5}}}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	return New(Config{MaxStreams: 10}, Deps{Snapshot: func() *logtally.Snapshot { return local }, History: &history{},
		Now: func() time.Time { return now }, Fleet: &Fleet{View: view.Load, History: h, Published: view.Published}})
}

func fleetView() *logtally.View {
	asOf := time.Date(2026, 11, 21, 12, 0, 0, 500e6, time.UTC)
	return &logtally.View{AsOf: asOf,
		Window: logtally.Snapshot{From: time.Unix(1001, 0).UTC(), To: time.Unix(1601, 0).UTC(), Length: 10 * time.Minute,
			Requests: 90, PageViews: 50, Visitors: 20,
			Pages: []logtally.PageCount{{Path: "/a", PageViews: 30}, {Path: "/b", PageViews: 20}}},
		Series: logtally.Series{Step: time.Minute, Points: []logtally.Point{
			{Time: asOf.Add(-time.Hour).Truncate(time.Minute), Requests: 4, PageViews: 3, Visitors: 2}}},
	}
}

func TestFleetEndpoints(t *testing.T) {
	var view publisher[logtally.View]
	h := &history{}
	s := fleetServer(h, &view)
	before := []struct {
		target string
		status int
		body   string
	}{
		{"/api/v1/stats", 503, `{"error":"` + errNoView + `"}`},
		{"/api/v1/pages", 503, `{"error":"` + errNoView + `"}`},
		{"/api/v1/series", 503, `{"error":"` + errNoView + `"}`},
		{"/api/v1/stats?scope=node", 200, `{"from":"1970-01-01T00:16:40Z","to":"1970-01-01T00:26:40Z","window_seconds":600,"visitors":2,"pageviews":5,"requests":9,"rejected":0}`},
	}
	for _, tt := range before {
		if rec := do(s, "GET", tt.target, nil); rec.Code != tt.status || rec.Body.String() != tt.body+"\n" {
			t.Errorf("before the first view, %s = %d %s\nwant %d %s", tt.target, rec.Code, rec.Body, tt.status, tt.body)
		}
	}
	view.Store(fleetView())
	tests := []struct {
		target string
		status int
		body   string
	}{
		{"/api/v1/stats", 200, `{"from":"1970-01-01T00:16:41Z","to":"1970-01-01T00:26:41Z","window_seconds":600,"visitors":20,"pageviews":50,"requests":90,"rejected":0,"as_of":"2026-11-21T12:00:00.5Z"}`},
		{"/api/v1/stats?scope=fleet", 200, `{"from":"1970-01-01T00:16:41Z","to":"1970-01-01T00:26:41Z","window_seconds":600,"visitors":20,"pageviews":50,"requests":90,"rejected":0,"as_of":"2026-11-21T12:00:00.5Z"}`},
		{"/api/v1/stats?scope=node", 200, `{"from":"1970-01-01T00:16:40Z","to":"1970-01-01T00:26:40Z","window_seconds":600,"visitors":2,"pageviews":5,"requests":9,"rejected":0}`},
		{"/api/v1/stats?scope=site", 400, `{"error":"scope must be node or fleet"}`},
		{"/api/v1/stats?scope=node&scope=fleet", 400, `{"error":"scope given more than once"}`},
		{"/api/v1/stats?scope=node&x=1", 400, `{"error":"unknown query parameter \"x\""}`},
		{"/api/v1/pages?limit=1", 200, `{"from":"1970-01-01T00:16:41Z","to":"1970-01-01T00:26:41Z","window_seconds":600,"pages":[{"path":"/a","pageviews":30}],"as_of":"2026-11-21T12:00:00.5Z"}`},
		{"/api/v1/pages?limit=1&scope=node", 200, `{"from":"1970-01-01T00:16:40Z","to":"1970-01-01T00:26:40Z","window_seconds":600,"pages":[{"path":"/a","pageviews":5}]}`},
		{"/api/v1/series", 200, `{"from":"2026-11-21T11:00:00.5Z","to":"2026-11-21T12:00:00.5Z","step_seconds":60,"approximate_visitors":false,"points":[{"t":"2026-11-21T11:00:00Z","requests":4,"pageviews":3,"visitors":2,"status":{"1xx":0,"2xx":0,"3xx":0,"4xx":0,"5xx":0},"bytes":0}],"as_of":"2026-11-21T12:00:00.5Z"}`},
		{"/api/v1/series?step=1m", 200, `{"from":"2026-11-21T11:00:00.5Z","to":"2026-11-21T12:00:00.5Z","step_seconds":60,"approximate_visitors":false,"points":[{"t":"2026-11-21T11:00:00Z","requests":4,"pageviews":3,"visitors":2,"status":{"1xx":0,"2xx":0,"3xx":0,"4xx":0,"5xx":0},"bytes":0}],"as_of":"2026-11-21T12:00:00.5Z"}`},
		{"/api/v1/series?step=1h&from=1795255200&to=1795258800", 200, `{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T11:00:00Z","step_seconds":3600,"approximate_visitors":true,"points":[{"t":"2026-11-21T10:00:00Z","requests":3,"pageviews":2,"visitors":1,"status":{"1xx":0,"2xx":2,"3xx":0,"4xx":1,"5xx":0},"bytes":900}]}`},
		{"/api/v1/series?step=2m", 400, `{"error":"step must be one of 1m, 5m, 15m, 1h, 1d"}`},
		{"/api/v1/series?since=1", 400, `{"error":"unknown query parameter \"since\""}`},
		{"/api/v1/pages/count?path=/a&path=/zz", 200, `{"pages":[{"path":"/a","window_pageviews":30,"today_pageviews":2,"total_pageviews":20},{"path":"/zz","window_pageviews":0,"today_pageviews":3,"total_pageviews":30}],"as_of":"2026-11-21T12:00:00.5Z"}`},
		{"/api/v1/pages/count?path=a", 400, `{"error":"a path must start with / and be at most 2048 bytes"}`},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := do(s, "GET", tt.target, nil)
			if rec.Code != tt.status || rec.Body.String() != tt.body+"\n" {
				t.Errorf("%s = %d %s\nwant %d %s", tt.target, rec.Code, rec.Body, tt.status, tt.body)
			}
		})
	}
	if h.step != time.Hour {
		t.Errorf("the fleet's history was asked for step %s, want the 1h query", h.step)
	}
	// A date is a day in the store's zone, for the fleet's history too.
	if rec := do(s, "GET", "/api/v1/series?step=1d&from=2026-11-20&to=2026-11-21", nil); rec.Code != http.StatusOK {
		t.Errorf("a series of dates from the fleet = %d %s, want 200", rec.Code, rec.Body)
	}
}

// TestFleetUnavailable: when the fleet database does not answer, history
// queries are 503s that say what to do and leak nothing; the View's
// answers go on.
func TestFleetUnavailable(t *testing.T) {
	var view publisher[logtally.View]
	view.Store(fleetView())
	s := fleetServer(&history{err: errors.New("dial tcp 10.0.0.7:5432: connection refused")}, &view)
	for _, target := range []string{"/api/v1/series?step=5m", "/api/v1/pages/count?path=/a"} {
		rec := do(s, "GET", target, nil)
		if rec.Code != 503 || rec.Body.String() != `{"error":"`+errUnavailable+`"}`+"\n" || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s = %d %s", target, rec.Code, rec.Body)
		}
	}
	if rec := do(s, "GET", "/api/v1/stats", nil); rec.Code != 200 {
		t.Errorf("stats = %d", rec.Code)
	}
}

func TestScopeWithoutFleet(t *testing.T) {
	s := testServer()
	if got, want := do(s, "GET", "/api/v1/stats?scope=node", nil).Body.String(), do(s, "GET", "/api/v1/stats", nil).Body.String(); got != want {
		t.Errorf("scope=node = %s, want %s", got, want)
	}
	rec := do(s, "GET", "/api/v1/stats?scope=fleet", nil)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "fleet mode is off") {
		t.Errorf("scope=fleet without fleet mode = %d %s", rec.Code, rec.Body)
	}
}

// TestFleetEvents: in fleet mode the event stream carries the fleet's
// View, with its as_of, from the first View on.
func TestFleetEvents(t *testing.T) {
	var view publisher[logtally.View]
	s := fleetServer(&history{}, &view)
	srv := streamServer(t, s)
	stream := openStream(t, srv.URL+"/api/v1/events")
	view.Store(fleetView())
	if got := stream.mustNext(); got.Requests != 90 || got.AsOf.IsZero() || len(got.Pages) != 2 {
		t.Errorf("first event = %+v, want the fleet's view", got)
	}
	v := fleetView()
	v.Window.Requests = 91
	view.Store(v)
	if got := stream.mustNext(); got.Requests != 91 {
		t.Errorf("second event = %+v, want the new view", got)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/stats?scope=node", nil))
	if !strings.Contains(rec.Body.String(), `"requests":9,`) {
		t.Errorf("scope=node beside the stream = %s", rec.Body)
	}
}

// TestFleetSaysWhyNoView: before the fleet's first View, the 503 says what
// the node knows of why, in the fleet's own words.
func TestFleetSaysWhyNoView(t *testing.T) {
	var view publisher[logtally.View]
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} }, History: &history{},
		Fleet: &Fleet{View: view.Load, History: &history{}, Published: view.Published,
			Why: func() string {
				return "shipping stopped: fleet database was first used with another --visitor-secret-file than this node's (every node must be given a copy of the same secret file)"
			}}})
	for _, target := range []string{"/api/v1/stats", "/api/v1/series"} {
		rec := do(s, "GET", target, nil)
		if want := `{"error":"the fleet's counts have not been read yet (shipping stopped: fleet database was first used with another --visitor-secret-file than this node's (every node must be given a copy of the same secret file)); ?scope=node answers for this node"}`; rec.Code != 503 || strings.TrimSpace(rec.Body.String()) != want {
			t.Errorf("%s = %d %s, want 503 %s", target, rec.Code, rec.Body, want)
		}
	}
}
