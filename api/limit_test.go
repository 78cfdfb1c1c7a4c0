package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tally"
	"github.com/prometheus/client_golang/prometheus"
)

var day = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

// held is a real store whose series of more than six hours of minutes
// wait, once begun, until release is closed: a test holds heavy queries
// running.
type held struct {
	*storage.Store
	began   chan time.Duration // the span of each series begun
	release chan struct{}
}

func (h held) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	if step < time.Hour && to.Sub(from) > 6*time.Hour {
		h.began <- to.Sub(from)
		<-h.release
	}
	return h.Store.Series(from, to, step)
}

// dayStore is a store in t.TempDir holding a page view every minute of day.
func dayStore(t *testing.T) *storage.Store {
	t.Helper()
	s, err := storage.Open(storage.Config{Path: filepath.Join(t.TempDir(), "db"), TZ: "UTC"},
		func() time.Time { return day.Add(24 * time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b := tally.NewBatch()
	for m := range 24 * 60 {
		b.Add(&logtally.Hit{Time: day.Unix() + int64(60*m), Path: []byte("/"), Status: 200, PageView: true,
			Visitor: uint64(m%7+1) * 0x9e3779b97f4a7c15}, false)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	return s
}

func get(h http.Handler, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

// TestHeavyQueriesCapped: with --max-heavy-queries 2 and two one-day
// series running, a third heavy query is answered 429 at once, with
// Retry-After and a JSON error that says what to do, while cheap queries
// are answered; the refusals are counted in /metrics and /api/v1/status,
// and logged once. Once one of the two ends, a heavy query runs again.
func TestHeavyQueriesCapped(t *testing.T) {
	h := held{Store: dayStore(t), began: make(chan time.Duration), release: make(chan struct{})}
	var log bytes.Buffer
	s := api.New(api.Config{MaxHeavy: 2}, api.Deps{
		Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} },
		History:  h, Metrics: prometheus.NewRegistry(),
		Status: func() api.Status { return api.Status{} },
		Now:    func() time.Time { return day.Add(24 * time.Hour) },
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
	})
	const oneDay = "/api/v1/series?from=2026-11-21&to=2026-11-21&step=5m"
	done := make(chan *httptest.ResponseRecorder)
	for range 2 {
		go func() { done <- get(s, oneDay) }()
		<-h.began
	}

	// A third heavy query, and a fourth: refused, never begun.
	for _, target := range []string{oneDay, "/api/v1/series?from=2026-11-21&to=2026-11-21&step=15m"} {
		third := make(chan *httptest.ResponseRecorder)
		go func() { third <- get(s, target) }()
		var rec *httptest.ResponseRecorder
		select {
		case <-h.began:
			t.Fatalf("%s: a third heavy query ran past --max-heavy-queries 2", target)
		case rec = <-third:
		}
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
			rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s: got %d, Retry-After %q, %q; want 429, 1, JSON", target, rec.Code,
				rec.Header().Get("Retry-After"), rec.Header().Get("Content-Type"))
		}
		var e api.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, "retry in a second") {
			t.Errorf("%s: body %q", target, rec.Body)
		}
	}

	// Cheap queries pass: six hours by minute, a day by hour, the live pages.
	for _, target := range []string{"/api/v1/series?from=2026-11-21T00:00:00Z&to=2026-11-21T05:59:59Z",
		"/api/v1/series?from=2026-11-21&to=2026-11-21&step=1h", "/api/v1/pages", "/api/v1/stats"} {
		if rec := get(s, target); rec.Code != http.StatusOK {
			t.Errorf("%s while heavy queries run: %d %s", target, rec.Code, rec.Body)
		}
	}

	metrics := get(s, "/metrics").Body.String()
	for _, want := range []string{"logtally_api_heavy_refused_total 2\n", "logtally_api_heavy_running 2\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var st api.Status
	json.Unmarshal(get(s, "/api/v1/status").Body.Bytes(), &st)
	if st.API == nil || *st.API != (api.HeavyStatus{Running: 2, Max: 2, Refused: 2}) {
		t.Errorf("/api/v1/status api: %+v", st.API)
	}
	if n := strings.Count(log.String(), "heavy query refused"); n != 1 {
		t.Errorf("%d log lines for 2 refusals in a second, want 1:\n%s", n, log.String())
	}

	close(h.release)
	for range 2 {
		rec := <-done
		var body api.SeriesBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != http.StatusOK || err != nil || len(body.Points) != 288 {
			t.Fatalf("held query: %d, %d points, %v", rec.Code, len(body.Points), err)
		}
		if body.Points[0].Requests != 5 || body.Points[0].Visitors != 5 {
			t.Errorf("first point: %+v", body.Points[0])
		}
	}
	go func() { <-h.began }()
	if rec := get(s, oneDay); rec.Code != http.StatusOK {
		t.Errorf("heavy query once the others ended: %d %s", rec.Code, rec.Body)
	}
}

// TestTooCostlySeries: a series at 5m or 15m that reads more than
// MaxSeriesReads minutes is a 400 naming the fix, before anything is read.
func TestTooCostlySeries(t *testing.T) {
	h := held{Store: dayStore(t), began: make(chan time.Duration, 1), release: make(chan struct{})}
	s := api.New(api.Config{}, api.Deps{Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} }, History: h})
	tests := []struct {
		target string
		code   int
		body   string
	}{
		{"/api/v1/series?from=2026-10-01&to=2026-11-21&step=5m", 400,
			`{"error":"the range reads 74880 minutes, more than 44640 (31 days): use step=1h or 1d, or a shorter range"}`},
		{"/api/v1/series?from=2026-10-21&to=2026-11-21&step=15m", 400,
			`{"error":"the range reads 46080 minutes, more than 44640 (31 days): use step=1h or 1d, or a shorter range"}`},
		{"/api/v1/series?from=2026-01-01&to=2026-11-21&step=1m", 400,
			`{"error":"more than 10000 points: use a longer step or a shorter range"}`},
		{"/api/v1/series?from=2026-01-01&to=2026-11-21&step=1h", 200, ""},
		{"/api/v1/series?from=2026-10-22&to=2026-11-21&step=15m", 200, ""},
	}
	close(h.release)
	for _, tt := range tests {
		rec := get(s, tt.target)
		select {
		case <-h.began:
		default:
		}
		if rec.Code != tt.code || (tt.body != "" && strings.TrimSpace(rec.Body.String()) != tt.body) {
			t.Errorf("%s: got %d %s, want %d %s", tt.target, rec.Code, rec.Body, tt.code, tt.body)
		}
	}
}
