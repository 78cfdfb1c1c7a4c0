package api

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// history is a History double that records what it was asked. Its series
// are kept from keptFrom, if set; it answers one point, and a second one
// an hour later.
type history struct {
	from, to time.Time
	step     time.Duration
	limit    int
	keptFrom time.Time
	err      error
}

func (h *history) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	h.from, h.to, h.step = from, to, step
	if h.err != nil {
		return logtally.Series{}, h.err
	}
	p := logtally.Point{Time: from.Truncate(step), Requests: 3, PageViews: 2, Visitors: 1, Status: [5]int64{0, 2, 0, 1, 0}, Bytes: 900}
	pts := []logtally.Point{p}
	if !h.keptFrom.IsZero() {
		p.Time = p.Time.Add(time.Hour)
		pts = append(pts, p)
	}
	return logtally.Series{Step: step, Approximate: step > time.Minute, Points: pts, KeptFrom: h.keptFrom}, nil
}

func (h *history) Pages(from, to time.Time, limit int) (logtally.PageRange, error) {
	h.from, h.to, h.limit = from, to, limit
	return logtally.PageRange{Pages: []logtally.PageCount{{Path: "/a", PageViews: 5}}, Other: 2, KeptFrom: h.keptFrom}, h.err
}

func (h *history) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	out := make([]logtally.PathCount, len(paths))
	for i, p := range paths {
		out[i] = logtally.PathCount{Path: p, Day: int64(len(p)), Total: int64(10 * len(p))}
	}
	return out, h.err
}

func historyServer(h *history, ready func() error) *Server {
	snap := &logtally.Snapshot{Length: 10 * time.Minute, Pages: []logtally.PageCount{{Path: "/a", PageViews: 7}}}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	paris, _ := time.LoadLocation("Europe/Paris")
	return New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }, History: h, Ready: ready,
		Now: func() time.Time { return now }, Zone: paris})
}

func TestHistoryEndpoints(t *testing.T) {
	tests := []struct {
		target string
		status int
		body   string
	}{
		{"/api/v1/series?from=2026-11-21T10:00:00Z&to=2026-11-21T11:00:00Z&step=1m", 200,
			`{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T11:00:00Z","step_seconds":60,"approximate_visitors":false,"points":[{"t":"2026-11-21T10:00:00Z","requests":3,"pageviews":2,"visitors":1,"status":{"1xx":0,"2xx":2,"3xx":0,"4xx":1,"5xx":0},"bytes":900}]}`},
		{"/api/v1/series?from=1795255200&to=1795258800&step=1h", 200,
			`{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T11:00:00Z","step_seconds":3600,"approximate_visitors":true,"points":[{"t":"2026-11-21T10:00:00Z","requests":3,"pageviews":2,"visitors":1,"status":{"1xx":0,"2xx":2,"3xx":0,"4xx":1,"5xx":0},"bytes":900}]}`},
		{"/api/v1/series", 200, // defaults: the last hour by minute
			`{"from":"2026-11-21T11:00:00Z","to":"2026-11-21T12:00:00Z","step_seconds":60,"approximate_visitors":false,"points":[{"t":"2026-11-21T11:00:00Z","requests":3,"pageviews":2,"visitors":1,"status":{"1xx":0,"2xx":2,"3xx":0,"4xx":1,"5xx":0},"bytes":900}]}`},
		{"/api/v1/series?from=yesterday", 400, `{"error":"from must be RFC3339 (2006-01-02T15:04:05Z), a date (2006-01-02) or unix seconds"}`},
		{"/api/v1/series?from=2026-11-21&to=2026-11-21&step=1d", 200, // a day in Paris
			`{"from":"2026-11-20T23:00:00Z","to":"2026-11-21T22:59:59Z","step_seconds":86400,"approximate_visitors":true,"points":[{"t":"2026-11-20T00:00:00Z","requests":3,"pageviews":2,"visitors":1,"status":{"1xx":0,"2xx":2,"3xx":0,"4xx":1,"5xx":0},"bytes":900}]}`},
		{"/api/v1/pages?from=2026-11-21&to=2026-11-22&limit=3", 200,
			`{"from":"2026-11-20T23:00:00Z","to":"2026-11-22T22:59:59Z","exact":false,"pages":[{"path":"/a","pageviews":5}],"other":2}`},
		{"/api/v1/pages?from=1795255200&to=2026-11-21T11:30:00%2B01:00", 200,
			`{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T10:30:00Z","exact":false,"pages":[{"path":"/a","pageviews":5}],"other":2}`},
		{"/api/v1/pages?from=2026-11-21", 400, `{"error":"give both from and to, or neither for the live window"}`},
		{"/api/v1/pages?from=2026-11-22&to=2026-11-21", 400, `{"error":"from is after to"}`},
		{"/api/v1/pages?from=2026-02-30&to=2026-11-21", 400, `{"error":"from must be RFC3339 (2006-01-02T15:04:05Z), a date (2006-01-02) or unix seconds"}`},
		{"/api/v1/pages?from=2024-01-01&to=2026-11-21", 400, `{"error":"the range is longer than 400 days"}`},
		{"/api/v1/pages?from=2026-11-21&to=2026-11-21&limit=0", 400, `{"error":"limit must be an integer from 1 to 1000"}`},
		{"/api/v1/pages?limit=1", 200, // the live window
			`{"from":"0001-01-01T00:00:00Z","to":"0001-01-01T00:00:00Z","window_seconds":600,"pages":[{"path":"/a","pageviews":7}]}`},
		{"/api/v1/series?to=-5", 400, `{"error":"to is out of range"}`},
		{"/api/v1/series?from=2026-11-21T12:00:00Z&to=2026-11-21T11:00:00Z", 400, `{"error":"from is after to"}`},
		{"/api/v1/series?step=2m", 400, `{"error":"step must be one of 1m, 5m, 15m, 1h, 1d"}`},
		{"/api/v1/series?step=1m&step=1h", 400, `{"error":"step given more than once"}`},
		{"/api/v1/series?since=1", 400, `{"error":"unknown query parameter \"since\""}`},
		{"/api/v1/pages/count?path=/a&path=/bb", 200,
			`{"pages":[{"path":"/a","window_pageviews":7,"today_pageviews":2,"total_pageviews":20},{"path":"/bb","window_pageviews":0,"today_pageviews":3,"total_pageviews":30}]}`},
		{"/api/v1/pages/count", 400, `{"error":"give 1 to 100 path parameters"}`},
		{"/api/v1/pages/count?path=a", 400, `{"error":"a path must start with / and be at most 2048 bytes"}`},
		{"/api/v1/pages/count?paths=/a", 400, `{"error":"unknown query parameter \"paths\""}`},
		{"/readyz", 200, `{"status":"ready"}`},
	}
	s := historyServer(&history{}, nil)
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
			if rec.Code != tt.status || rec.Body.String() != tt.body+"\n" {
				t.Errorf("got %d %s\nwant %d %s", rec.Code, rec.Body, tt.status, tt.body)
			}
		})
	}
}

func TestSeriesTooManyPointsIs400(t *testing.T) {
	s := historyServer(&history{err: logtally.ErrTooManyPoints}, nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/series?from=0&step=1m", nil))
	if rec.Code != 400 {
		t.Errorf("status = %d, want 400: %s", rec.Code, rec.Body)
	}
}

func TestTooManyCountPaths(t *testing.T) {
	target := "/api/v1/pages/count?path=/0"
	for i := range 100 {
		target += "&path=/" + string(rune('a'+i%26))
	}
	rec := httptest.NewRecorder()
	historyServer(&history{}, nil).ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	if rec.Code != 400 {
		t.Errorf("101 paths: status %d, want 400", rec.Code)
	}
}

func TestInternalErrorDoesNotLeak(t *testing.T) {
	s := historyServer(&history{err: errors.New("read /var/lib/logtally.db: input/output error")}, nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/series", nil))
	if rec.Code != 500 || rec.Body.String() != `{"error":"internal error"}`+"\n" {
		t.Errorf("got %d %s, want 500 without details", rec.Code, rec.Body)
	}
}

func TestReadyzReportsReason(t *testing.T) {
	var fail error
	s := historyServer(&history{}, func() error { return fail })
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get(); code != 200 {
		t.Fatalf("ready: %d", code)
	}
	fail = errors.New("commit: no space left on device")
	if code, body := get(); code != 503 || body != `{"error":"not ready: commit: no space left on device"}`+"\n" {
		t.Errorf("failing store: %d %s", code, body)
	}
}

// TestSeriesBeforeKeptFrom: a point before kept_from has null counts, told
// apart from a zero, and the answer says from when steps are kept.
func TestSeriesBeforeKeptFrom(t *testing.T) {
	kept := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	s := historyServer(&history{keptFrom: kept}, nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/series?from=2026-11-21T10:00:00Z&to=2026-11-21T11:00:00Z&step=1h", nil))
	want := `{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T11:00:00Z","step_seconds":3600,"approximate_visitors":true,"kept_from":"2026-11-21T11:00:00Z","points":[` +
		`{"t":"2026-11-21T10:00:00Z","requests":null,"pageviews":null,"visitors":null,"status":null,"bytes":null},` +
		`{"t":"2026-11-21T11:00:00Z","requests":3,"pageviews":2,"visitors":1,"status":{"1xx":0,"2xx":2,"3xx":0,"4xx":1,"5xx":0},"bytes":900}]}` + "\n"
	if rec.Code != 200 || rec.Body.String() != want {
		t.Errorf("got %d %s\nwant %s", rec.Code, rec.Body, want)
	}
	var body SeriesBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if p := body.Points; len(p) != 2 || p[0].Held || !p[1].Held || p[1].Status.C4 != 1 || p[1].Bytes != 900 {
		t.Errorf("decoded points %+v", p)
	}
}

// TestPagesFromHistoryNeedsPageHistory: a History that cannot answer pages
// of a range gets a JSON 404, not a panic.
func TestPagesFromHistoryNeedsPageHistory(t *testing.T) {
	snap := &logtally.Snapshot{}
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }, History: seriesOnly{}})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/pages?from=2026-11-21&to=2026-11-21", nil))
	if rec.Code != 404 || rec.Body.String() != `{"error":"no history of pages is kept"}`+"\n" {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}

type seriesOnly struct{}

func (seriesOnly) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	return logtally.Series{}, nil
}

func (seriesOnly) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	return nil, nil
}
