package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/logtally/logtally"
)

// fakeBreakdowns is the breakdowns of a server: show on, with counter
// show's window and history; click off.
type fakeBreakdowns struct{ counters fakeCounters }

func (f fakeBreakdowns) BreakdownList() []Breakdown {
	return []Breakdown{{Name: "show", On: true, PerRequest: true}, {Name: "click", Off: "add click to --breakdowns"}}
}

func (f fakeBreakdowns) BreakdownSnapshot(name string) (*logtally.Snapshot, bool) {
	if name != "show" {
		return nil, false
	}
	return f.counters.CounterSnapshot(name)
}

func (f fakeBreakdowns) BreakdownHistory(name string) History { return f.counters.CounterHistory(name) }

// A breakdown's keys answer as a counter's: the same window and range,
// under "breakdown"; an unknown one and one off are 404s, the latter
// naming the flag that turns it on.
func TestBreakdownTop(t *testing.T) {
	s := fuzzServer()
	defer s.Close()
	for _, tt := range []struct {
		target  string
		code    int
		counter string // the counter answer it equals, but for its name
		has     string
	}{
		{"/api/v1/breakdowns", 200, "", `{"breakdowns":[{"name":"show","counts":"requests","window":{"count":610,"visitors":40,"keys":4}}],"off":["click"]}`},
		{"/api/v1/breakdowns/show?limit=2", 200, "/api/v1/counters/show/top?limit=2", ""},
		{"/api/v1/breakdowns/show?from=2026-11-20&to=2026-11-21", 200, "/api/v1/counters/show/top?from=2026-11-20&to=2026-11-21", ""},
		{"/api/v1/breakdowns/click", 404, "", "add click to --breakdowns"},
		{"/api/v1/breakdowns/nope", 404, "", "GET /api/v1/breakdowns lists them"},
		{"/api/v1/breakdowns/show?limit=0", 400, "", "limit"},
		{"/api/v1/breakdowns/show?site=a.example", 400, "", "breakdowns count every site together"},
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
		got := strings.TrimSpace(rec.Body.String())
		if rec.Code != tt.code || !strings.Contains(got, tt.has) {
			t.Errorf("%s: %d %s; want %d with %q", tt.target, rec.Code, got, tt.code, tt.has)
		}
		if tt.counter == "" {
			continue
		}
		crec := httptest.NewRecorder()
		s.ServeHTTP(crec, httptest.NewRequest(http.MethodGet, tt.counter, nil))
		want := strings.Replace(strings.TrimSpace(crec.Body.String()), `{"counter":"show",`, `{"breakdown":"show",`, 1)
		if got != want {
			t.Errorf("%s = %s\nwant the counter's %s", tt.target, got, want)
		}
	}
}
