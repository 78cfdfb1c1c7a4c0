package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/storage"
)

// TestCounterNeverMatchedAnswers: a counter that has matched nothing, right
// after start and after lines of other kinds were committed, answers what
// is known, as /stats does: its keys' counts are zeros, its top keys of a
// range none (exactly), its series zeros. None is a 503.
func TestCounterNeverMatchedAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	appendLines(t, log, line("10.0.0.1", clk.At(-time.Second), "GET /about HTTP/1.1", 200, browser))
	m := start(t, clk.Now, "run", "--listen", "127.0.0.1:0", "--db", db, "--tz", "UTC", "--flush-interval", "1h",
		"--counter", "never=GET /never/{id}", log)
	from, to := "2026-11-21T11:00:00Z", "2026-11-21T12:00:00Z"
	paths := map[string]string{
		"key":    "/api/v1/counters/never?key=1",
		"top":    "/api/v1/counters/never/top?from=" + from + "&to=" + to,
		"series": "/api/v1/series?counter=never&from=" + from + "&to=" + to + "&step=1h",
		"recent": "/api/v1/series?counter=never",
	}
	wants := map[string]string{
		"key":    `{"counter":"never","keys":[{"key":"1","window":0,"today":0,"total":0,"window_visitors":0,"exact":true}]}`,
		"top":    `"exact":true,"items":[],"other":0}`,
		"series": `"requests":0,`,
		"recent": `"points":[`,
	}
	for name, path := range paths {
		code, body := get(t, m, path)
		if code != http.StatusOK || !strings.Contains(body, wants[name]) {
			t.Errorf("before the first commit, %s: %d %s, want 200 with %s", path, code, body, wants[name])
		}
	}
}

// TestCounterKeysPastDayCap: a day that counted more keys than
// --max-day-paths says so: its top keys are not exact and the folded
// counts are its other, not a key; a key folded on that day is not
// exact.
func TestCounterKeysPastDayCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	var lines []string
	for i := range 10 {
		for range 3 {
			lines = append(lines, line("10.0.0.1", clk.At(-time.Minute), "GET /k/a HTTP/1.1", 200, browser))
		}
		lines = append(lines, line("10.0.0.1", clk.At(-time.Minute), fmt.Sprintf("GET /k/%d HTTP/1.1", i), 200, browser))
	}
	appendLines(t, log, lines...)
	decl := []string{"--db", db, "--tz", "UTC", "--max-day-paths", "2", "--counter", "k=GET /k/{id}"}
	replayLogs(t, append(decl, log)...)
	m := start(t, clk.Now, append(append([]string{"run", "--listen", "127.0.0.1:0"}, decl...), filepath.Join(dir, "none.log"))...)
	_, top := get(t, m, "/api/v1/counters/k/top?from=2026-11-21&to=2026-11-21")
	if want := `"exact":false,"items":[{"key":"a","count":30},{"key":"0","count":1}],"other":9}`; !strings.Contains(top, want) {
		t.Errorf("top keys of the day: %s, want %s", top, want)
	}
	_, keys := get(t, m, "/api/v1/counters/k?key=a&key=5")
	for _, want := range []string{`{"key":"a","window":30,"today":30,"total":30,`, `{"key":"5","window":1,"today":0,"total":0,"window_visitors":0,"exact":false}`} {
		if !strings.Contains(keys, want) {
			t.Errorf("keys: %s, want %s", keys, want)
		}
	}
}

// TestSameCountersStoredOnce: counters that count the same lines under the
// same keys (same method, pattern and status) are counted and stored once,
// and each answers as the first; one declared later that counts apart
// again keeps the history it shared, and counts on its own from there.
func TestSameCountersStoredOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	logs := filepath.Join("..", "..", "testdata", "counters.log")
	same := []string{"--db", db, "--tz", "UTC", "--counter", "click=GET /watch/{id}", "--counter", "watch=GET /watch/{n}"}
	replayLogs(t, append(same, logs)...)
	got, err := reportOf(t, "--db", db, "--tz", "UTC", "--pages", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"counter click: 64 lines, 33 visitors", "counter watch: 64 lines, 33 visitors"} {
		if !strings.Contains(got, want) {
			t.Errorf("report: no %q in\n%s", want, got)
		}
	}
	store, err := storage.OpenReadOnly(storage.Config{Path: db, TZ: "UTC"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	watch, _ := store.Site(logtally.CounterSite("watch"))
	minutes, err := watch.Minutes(time.Time{}, time.Now())
	store.Close()
	if err != nil || len(minutes) != 0 {
		t.Errorf("watch's own site holds %d minutes (%v), want none: it shares click's", len(minutes), err)
	}
	// watch alone, counting a line more than click would.
	apart := filepath.Join(dir, "more.log")
	appendLines(t, apart, line("10.9.9.9", "21/Nov/2026:12:09:00 +0000", "GET /watch/1 HTTP/1.1", 200, browser))
	replayLogs(t, "--db", db, "--tz", "UTC", "--counter", "watch=GET /watch/{n}", apart)
	got, err = reportOf(t, "--db", db, "--tz", "UTC", "--pages", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"counter click: 64 lines", "counter watch: 65 lines"} {
		if !strings.Contains(got, want) {
			t.Errorf("report after watch counted apart: no %q in\n%s", want, got)
		}
	}
}
