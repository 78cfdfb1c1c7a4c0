package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// fakeSites is a daemon's sites as the pipeline would give them: windows
// only, no history stored yet for any.
type fakeSites map[string]*logtally.Snapshot

func (f fakeSites) SiteSnapshot(name string) (*logtally.Snapshot, bool) {
	s, ok := f[name]
	return s, ok
}
func (f fakeSites) SiteHistory(string) History { return nil }
func (f fakeSites) Sites() []logtally.SiteCount {
	return []logtally.SiteCount{{Site: "b.example", Requests: 9, PageViews: 5, Visitors: 2},
		{Site: "a.example", Requests: 4, PageViews: 3, Visitors: 1}}
}

func TestSiteParameter(t *testing.T) {
	all := &logtally.Snapshot{Length: time.Minute, Requests: 13, PageViews: 8, Visitors: 2}
	sites := fakeSites{
		"a.example": {Length: time.Minute, Requests: 4, PageViews: 3, Visitors: 1},
		"b.example": {Length: time.Minute, Requests: 9, PageViews: 5, Visitors: 2},
	}
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return all }, Sites: sites})
	single := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return all }})
	tests := []struct {
		server   *Server
		target   string
		status   int
		requests int64
	}{
		{s, "/api/v1/stats", 200, 13},
		{s, "/api/v1/stats?site=a.example", 200, 4},
		{s, "/api/v1/stats?site=b.example", 200, 9},
		{s, "/api/v1/pages?site=b.example&limit=2", 200, -1},
		{s, "/api/v1/stats?site=c.example", 404, -1},
		{s, "/api/v1/stats?site=a.example&site=b.example", 400, -1},
		{s, "/api/v1/stats?site=a.example&x=1", 400, -1},
		{s, "/api/v1/series?site=a.example", 503, -1}, // a site not stored yet
		{single, "/api/v1/stats?site=default", 200, 13},
		{single, "/api/v1/stats?site=a.example", 404, -1},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		tt.server.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
		if rec.Code != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.target, rec.Code, rec.Body, tt.status)
			continue
		}
		var body struct {
			Requests int64
			Error    string
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s: %s is not JSON", tt.target, rec.Body)
		}
		if tt.status != 200 && body.Error == "" {
			t.Errorf("%s: %s has no error", tt.target, rec.Body)
		}
		if tt.requests >= 0 && body.Requests != tt.requests {
			t.Errorf("%s: %d requests, want %d", tt.target, body.Requests, tt.requests)
		}
	}
}

func TestSitesList(t *testing.T) {
	snap := &logtally.Snapshot{Length: time.Minute, Requests: 13, PageViews: 8, Visitors: 2}
	for _, tt := range []struct {
		deps Deps
		want string
	}{
		{Deps{Snapshot: func() *logtally.Snapshot { return snap }, Sites: fakeSites{}},
			`{"sites":[{"site":"b.example","visitors":2,"pageviews":5,"requests":9},{"site":"a.example","visitors":1,"pageviews":3,"requests":4}]}`},
		{Deps{Snapshot: func() *logtally.Snapshot { return snap }},
			`{"sites":[{"site":"default","visitors":2,"pageviews":8,"requests":13}]}`},
	} {
		rec := httptest.NewRecorder()
		New(Config{}, tt.deps).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/sites", nil))
		if got := rec.Body.String(); rec.Code != 200 || got != tt.want+"\n" {
			t.Errorf("/api/v1/sites = %d %s, want %s", rec.Code, got, tt.want)
		}
	}
}
