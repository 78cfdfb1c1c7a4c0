package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		"key":    `{"counter":"never","keys":[{"key":"1","window":0,"today":0,"total":0,"window_visitors":0}]}`,
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
