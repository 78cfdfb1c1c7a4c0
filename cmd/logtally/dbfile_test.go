package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/storage"
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

// TestForeignDatabaseRefused: another program's bbolt file given as --db
// is refused, naming the flag, and left as it was, with no keys file made
// beside it. Before, run took it and wrote logtally's buckets beside the
// program's users.
func TestForeignDatabaseRefused(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "app.db")
	bdb, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("users"))
		if err != nil {
			return err
		}
		return b.Put([]byte("alice"), []byte("admin"))
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(db)
	for _, cmd := range []string{"run", "replay"} {
		m := NewMain()
		m.Stdout, m.Stderr = io.Discard, io.Discard
		args := []string{cmd, "--db", db}
		if cmd == "run" {
			args = append(args, "--admin-listen", "127.0.0.1:0")
		} else {
			args = append(args, filepath.Join(t.TempDir(), "none.log"))
			os.WriteFile(args[len(args)-1], nil, 0o600)
		}
		if err := m.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		err := m.Run(context.Background())
		m.Close()
		if !errors.Is(err, storage.ErrForeign) || !strings.Contains(err.Error(), "--db") || !strings.Contains(err.Error(), `users`) {
			t.Errorf("%s: %v, want ErrForeign naming --db and the bucket users", cmd, err)
		}
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(after, before) {
		t.Error("the refused file was changed")
	}
	if _, err := os.Stat(db + ".keys"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a keys file was made beside the refused file: %v", err)
	}
}
