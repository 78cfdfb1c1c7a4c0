package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
)

// TestFleetFirstStartClaimsTheLog: a node's first start in fleet mode waits
// for the fleet database, whose salt it must hash visitors with; the log is
// rotated twice (copytruncate, then a rename) and the node stopped while it
// waits. The next start, with the database reachable, counts every line of
// the rotated files: they were the log's when the first start claimed it,
// not archives from before it.
func TestFleetFirstStartClaimsTheLog(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "logtally.db")
	now := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
	at := func(i int) string {
		return now.Add(time.Duration(i) * time.Second).Format("02/Jan/2006:15:04:05 -0700")
	}
	for i := range 30 {
		appendLines(t, log, line(fmt.Sprintf("192.0.2.%d", i), at(i), "GET / HTTP/1.1", 200, browser))
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := fmt.Sprintf("postgres://postgres@%s/postgres?connect_timeout=1", closed.Addr())
	closed.Close()
	m := NewMain()
	var stderr syncBuffer
	m.Stdout, m.Stderr = &stderr, &stderr
	if err := m.ParseFlags([]string{"run", "--fleet", unreachable, "--node", "first", "--db", db, "--admin-listen", "127.0.0.1:0", log}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	poll.Until(t, "the first start to wait for the fleet database", func() bool {
		return strings.Contains(stderr.String(), "waiting for the fleet database")
	})
	for i := 30; i < 50; i++ {
		appendLines(t, log, line(fmt.Sprintf("192.0.2.%d", i), at(i), "GET / HTTP/1.1", 200, browser))
	}
	copyTruncateFile(t, log, log+".1")
	appendLines(t, log, line("192.0.2.50", at(50), "GET / HTTP/1.1", 200, browser))
	if err := os.Rename(log+".1", log+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	appendLines(t, log, line("192.0.2.51", at(51), "GET / HTTP/1.1", 200, browser))
	cancel()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run while waiting, cancelled: %v", err)
	}
	m.Close()

	m = start(t, time.Now, "run", "--fleet", url, "--node", "first", "--db", db, "--admin-listen", "127.0.0.1:0", "--flush-interval", "10ms", log)
	poll.Until(t, "every line counted", func() bool { return m.run().pipeline.Commits() > 0 && stats(t, m).Requests >= 52 })
	if got := stats(t, m).Requests; got != 52 {
		t.Errorf("requests in the window = %d, want 52", got)
	}
}

// copyTruncateFile copies path to dst and truncates path, as logrotate's
// copytruncate does.
func copyTruncateFile(t *testing.T, path, dst string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}
