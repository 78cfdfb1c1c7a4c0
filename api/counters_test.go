package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
)

// fakeCounters is a daemon's counters as the pipeline and the store give
// them: show and click, their live windows, and click's history.
type fakeCounters struct {
	hist History
	all  bool // every counter has hist, not click alone
}

func (f fakeCounters) Declared() ([]counter.Counter, []counter.Ratio) {
	return []counter.Counter{
			{Name: "show", Methods: []string{"GET"}, Pattern: "/thumb/{id}.jpg", Captures: []string{"id"}},
			{Name: "click", Methods: []string{"GET"}, Pattern: "/watch/{id}", Status: "2xx", Captures: []string{"id"}},
		},
		[]counter.Ratio{{Name: "ctr", Numerator: "click", Denominator: "show"}}
}

func (f fakeCounters) CounterSnapshot(name string) (*logtally.Snapshot, bool) {
	switch name {
	case "show":
		return &logtally.Snapshot{Length: time.Minute, Requests: 610, Visitors: 40, Pages: []logtally.PageCount{
			{Path: "a", PageViews: 300}, {Path: "b", PageViews: 200}, {Path: "c", PageViews: 100}, {Path: "d", PageViews: 10}}}, true
	case "click":
		return &logtally.Snapshot{Length: time.Minute, Requests: 76, Visitors: 9, Pages: []logtally.PageCount{
			{Path: "b", PageViews: 40, Visitors: 12}, {Path: "a", PageViews: 30, Visitors: 9}, {Path: "d", PageViews: 5, Visitors: 5},
			{Path: "c", PageViews: 1, Visitors: 1}}}, true
	}
	return nil, false
}

func (f fakeCounters) CounterHistory(name string) History {
	if name == "click" || f.all && name == "show" {
		return f.hist
	}
	return nil
}

// clickHistory is click's stored history: counts of a day and in all.
type clickHistory struct{}

func (clickHistory) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	return logtally.Series{Step: step}, nil
}

func (clickHistory) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	out := make([]logtally.PathCount, len(paths))
	for i, p := range paths {
		out[i] = logtally.PathCount{Path: p, Day: int64(len(p)) * 7, Total: int64(len(p)) * 70}
		if p == logtally.OtherPath { // nothing folded
			out[i].Day, out[i].Total = 0, 0
		}
	}
	return out, nil
}

func (clickHistory) Pages(from, to time.Time, limit int) (logtally.PageRange, error) {
	return logtally.PageRange{Exact: true, Pages: []logtally.PageCount{{Path: "x", PageViews: 9}, {Path: "y", PageViews: 4}}[:min(limit, 2)]}, nil
}

func TestCounterEndpoints(t *testing.T) {
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} },
		Counters: fakeCounters{hist: clickHistory{}}, Now: func() time.Time { return time.Unix(1e9, 0) }})
	none := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} }})
	tests := []struct {
		server *Server
		target string
		status int
		want   string // the body, or a part of it for errors
	}{
		{s, "/api/v1/counters", 200, `{"counters":[{"name":"show","methods":["GET"],"pattern":"/thumb/{id}.jpg","status":"","captures":["id"],"window":{"count":610,"visitors":40,"keys":4}},{"name":"click","methods":["GET"],"pattern":"/watch/{id}","status":"2xx","captures":["id"],"window":{"count":76,"visitors":9,"keys":4}}],"ratios":[{"name":"ctr","numerator":"click","denominator":"show","window":{"numerator":76,"denominator":610,"ratio":0.12459016393442623}}]}`},
		{s, "/api/v1/counters/click?key=b&key=zz", 200, `{"counter":"click","keys":[{"key":"b","window":40,"today":7,"total":70,"window_visitors":12,"exact":true},{"key":"zz","window":0,"today":14,"total":140,"window_visitors":0,"exact":true}]}`},
		{s, "/api/v1/counters/show?key=a", 503, "not stored yet"},
		{s, "/api/v1/counters/click", 400, "key"},
		{s, "/api/v1/counters/nosuch?key=a", 404, "no counter"},
		{s, "/api/v1/counters/click/top?limit=2", 200, `{"counter":"click","from":"0001-01-01T00:00:00Z","to":"0001-01-01T00:00:00Z","window_seconds":60,"items":[{"key":"b","count":40,"visitors":12},{"key":"a","count":30,"visitors":9}]}`},
		{s, "/api/v1/counters/click/top?limit=1&from=2026-11-20&to=2026-11-21", 200, `"exact":true,"items":[{"key":"x","count":9}],"other":0}`},
		{s, "/api/v1/counters/click/top?from=2026-11-20", 400, "both from and to"},
		// By ratio, then by denominator: b 0.2 (200), a 0.1 (300), c 0.01; d has 10 shows.
		{s, "/api/v1/ratios/ctr/top?min=100", 200, `{"ratio":"ctr","numerator":"click","denominator":"show","min":100,"items":[{"key":"b","numerator":40,"denominator":200,"ratio":0.2},{"key":"a","numerator":30,"denominator":300,"ratio":0.1},{"key":"c","numerator":1,"denominator":100,"ratio":0.01}]}`},
		{s, "/api/v1/ratios/ctr/top?min=5&limit=1", 200, `"items":[{"key":"d","numerator":5,"denominator":10,"ratio":0.5}]}`},
		{s, "/api/v1/ratios/ctr/top?min=-1", 400, "min"},
		{s, "/api/v1/ratios/nosuch/top", 404, "no ratio"},
		{s, "/api/v1/series?counter=click&step=1h", 200, `"step_seconds":3600`},
		{s, "/api/v1/series?counter=show", 503, "not stored yet"},
		{s, "/api/v1/series?counter=click&key=a", 400, "per key"},
		{s, "/api/v1/series?counter=nosuch", 404, "no counter"},
		{none, "/api/v1/counters", 404, "no counters are declared"},
		{none, "/api/v1/ratios/ctr/top", 404, "no counters are declared"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		tt.server.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
		got := strings.TrimSpace(rec.Body.String())
		if rec.Code != tt.status || !strings.Contains(got, tt.want) || tt.status == 200 && strings.HasPrefix(tt.want, "{") && got != tt.want {
			t.Errorf("%s: %d %s\nwant %d %s", tt.target, rec.Code, got, tt.status, tt.want)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q", tt.target, ct)
		}
	}
}
