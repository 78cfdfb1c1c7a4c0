package api

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// history is a History double that records what it was asked.
type history struct {
	from, to time.Time
	step     time.Duration
	err      error
}

func (h *history) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	h.from, h.to, h.step = from, to, step
	if h.err != nil {
		return logtally.Series{}, h.err
	}
	return logtally.Series{Step: step, Approximate: step > time.Minute, Points: []logtally.Point{
		{Time: from.Truncate(step), Requests: 3, PageViews: 2, Visitors: 1}}}, nil
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
	return New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }, History: h, Ready: ready,
		Now: func() time.Time { return now }})
}

func TestHistoryEndpoints(t *testing.T) {
	tests := []struct {
		target string
		status int
		body   string
	}{
		{"/api/v1/series?from=2026-11-21T10:00:00Z&to=2026-11-21T11:00:00Z&step=1m", 200,
			`{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T11:00:00Z","step_seconds":60,"approximate_visitors":false,"points":[{"t":"2026-11-21T10:00:00Z","requests":3,"pageviews":2,"visitors":1}]}`},
		{"/api/v1/series?from=1795255200&to=1795258800&step=1h", 200,
			`{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T11:00:00Z","step_seconds":3600,"approximate_visitors":true,"points":[{"t":"2026-11-21T10:00:00Z","requests":3,"pageviews":2,"visitors":1}]}`},
		{"/api/v1/series", 200, // defaults: the last hour by minute
			`{"from":"2026-11-21T11:00:00Z","to":"2026-11-21T12:00:00Z","step_seconds":60,"approximate_visitors":false,"points":[{"t":"2026-11-21T11:00:00Z","requests":3,"pageviews":2,"visitors":1}]}`},
		{"/api/v1/series?from=yesterday", 400, `{"error":"from must be RFC3339 (2006-01-02T15:04:05Z) or unix seconds"}`},
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
