package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
)

// TestFleetRawBytesInPaths: nginx logs a raw byte of a request as \xHH, so
// a request for /caf and the byte 0xE9, or with a NUL, puts bytes that are
// not UTF-8 text in a path. The node ships the batch that holds them (once,
// PostgreSQL refused it and every batch after it waited behind it for
// good), the fleet and the node's own answers show the same escaped paths,
// and the batches after it are shipped.
func TestFleetRawBytesInPaths(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	now := func() string { return time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700") }
	appendLines(t, log,
		line("192.0.2.1", now(), `GET /caf\xE9 HTTP/1.1`, 200, browser),
		line("192.0.2.2", now(), `GET /a\x00b HTTP/1.1`, 200, browser),
		line("192.0.2.3", now(), `GET /caf\xC3\xA9 HTTP/1.1`, 200, browser),
		line("192.0.2.4", now(), `GET /x\x5CxE9 HTTP/1.1`, 200, browser))
	m := start(t, time.Now, "run", "--fleet", url, "--visitor-secret-file", secretFile(t), "--node", "solo", "--db", filepath.Join(dir, "db"),
		"--admin-listen", "127.0.0.1:0", "--flush-interval", "20ms", "--fleet-refresh", "50ms", log)
	want := []string{`/a\x00b`, `/caf\xE9`, "/café", `/x\x5CxE9`}
	poll.Until(t, "the fleet to count the raw paths", func() bool { return slices.Equal(pagePaths(t, m, ""), want) })
	poll.Until(t, "the node to show the fleet's paths", func() bool { return slices.Equal(pagePaths(t, m, "?scope=node"), want) })

	appendLines(t, log, line("192.0.2.5", now(), "GET /after HTTP/1.1", 200, browser))
	want = []string{`/a\x00b`, "/after", `/caf\xE9`, "/café", `/x\x5CxE9`}
	poll.Until(t, "the batch after it to be shipped", func() bool { return slices.Equal(pagePaths(t, m, ""), want) })
	var st struct {
		Fleet struct {
			State          string `json:"state"`
			PendingBatches int64  `json:"pending_batches"`
		} `json:"fleet"`
	}
	poll.Until(t, "the outbox to empty", func() bool {
		_, body := get(t, m, "/api/v1/status")
		return json.Unmarshal([]byte(body), &st) == nil && st.Fleet.PendingBatches == 0
	})
	if st.Fleet.State != "shipping" {
		t.Errorf("fleet state %q, want shipping", st.Fleet.State)
	}
}

// pagePaths returns the paths of the live window's pages, in path order,
// as the API answers them with the query q.
func pagePaths(t *testing.T, m *Main, q string) []string {
	t.Helper()
	code, body := get(t, m, "/api/v1/pages"+q)
	var pages struct {
		Pages []logtally.PageCount `json:"pages"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &pages) != nil {
		return nil
	}
	var out []string
	for _, p := range pages.Pages {
		out = append(out, p.Path)
	}
	slices.Sort(out)
	return out
}
