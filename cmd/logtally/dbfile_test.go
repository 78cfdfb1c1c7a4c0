package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logtally/logtally/internal/poll"
)

// lockedBuffer is a log destination read by the test while the daemon
// writes to it.
type lockedBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{mu: make(chan struct{}, 1)} }

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// TestDeletedDatabaseIsReported: the database file deleted under a running
// daemon shows in /readyz, /api/v1/status and /metrics, and in the log
// once, with the fix. Before, /readyz stayed ready and nothing was said.
func TestDeletedDatabaseIsReported(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "logtally.db")
	logs := newLockedBuffer()
	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, logs
	if err := m.ParseFlags([]string{"run", "--db", db, "--admin-listen", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if code, body := get(t, m, "/readyz"); code != 200 {
		t.Fatalf("readyz before: %d %s", code, body)
	}
	os.Remove(db)
	gone := db + ": database file deleted or replaced while open: it was deleted"
	if code, body := get(t, m, "/readyz"); code != 503 || body != `{"error":"not ready: `+gone+`"}` {
		t.Errorf("readyz: %d %s, want 503 and %s", code, body, gone)
	}
	if _, body := get(t, m, "/api/v1/status"); !strings.Contains(body, `"store":{"path":"`+db+`","state":"failing","error":"`+gone+`"`) {
		t.Errorf("status: %s", body)
	}
	if _, body := get(t, m, "/metrics"); !strings.Contains(body, "\nlogtally_store_file_gone 1\n") {
		t.Error("metrics: no logtally_store_file_gone 1")
	}
	// The watch stops once it has logged (TestWatchFileLogsOnce).
	poll.Until(t, "the log to say it", func() bool { return strings.Contains(logs.String(), "database file gone") })
	if log := logs.String(); strings.Count(log, "database file gone") != 1 || !strings.Contains(log, "restore the file from a backup") {
		t.Errorf("the log says it %d times, want once with the fix:\n%s", strings.Count(log, "database file gone"), log)
	}
}
