package pgtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func connect(t *testing.T, ctx context.Context, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestServerSurvivesImmediateStop checks what the fault tests rely on: a
// committed row is still there after a crash-like stop and a restart on the
// same port, and a connection that was open before is dead after it.
func TestServerSurvivesImmediateStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := Start(t)
	conn := connect(t, ctx, s.URL())
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	s.StopImmediate()
	if s.Running() {
		t.Fatal("running after StopImmediate")
	}
	if err := conn.Ping(ctx); err == nil {
		t.Error("old connection still answers after StopImmediate")
	}
	s.Restart()
	if s.Port() != port {
		t.Errorf("port %d after restart, want %d", s.Port(), port)
	}
	var got int
	if err := connect(t, ctx, s.URL()).QueryRow(ctx, "SELECT x FROM t").Scan(&got); err != nil || got != 42 {
		t.Errorf("after restart: x = %d, %v; want 42", got, err)
	}
}

func TestTerminateOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := Start(t)
	victims := []*pgx.Conn{connect(t, ctx, s.URL()), connect(t, ctx, s.URL())}
	n, err := s.TerminateOthers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(victims) {
		t.Errorf("terminated %d backends, want %d", n, len(victims))
	}
	for i, c := range victims {
		_, err := c.Exec(ctx, "SELECT 1")
		var pgErr *pgconn.PgError
		if err == nil {
			t.Errorf("connection %d still works", i)
		} else if errors.As(err, &pgErr) && pgErr.Code != "57P01" {
			t.Errorf("connection %d: %v, want admin shutdown (57P01) or a closed connection", i, err)
		}
	}
}

func TestCreateDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := Start(t, "fsync=on")
	url, err := s.CreateDatabase(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	var name, fsync string
	if err := connect(t, ctx, url).QueryRow(ctx, "SELECT current_database(), current_setting('fsync')").Scan(&name, &fsync); err != nil {
		t.Fatal(err)
	}
	if name != "other" || fsync != "on" {
		t.Errorf("database %q, fsync %q; want other, on (settings passed to Start win over the defaults)", name, fsync)
	}
}

// TestProxyLosesCommitReply checks the proxy's one trick: the client's
// COMMIT fails, yet the transaction is committed.
func TestProxyLosesCommitReply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := Start(t)
	direct := connect(t, ctx, s.URL())
	if _, err := direct.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	p := s.Proxy(t)
	conn := connect(t, ctx, p.URL())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	p.LoseCommitReplies(1)
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit through the proxy succeeded; want its reply lost")
	}
	// The server finishes the commit although the client never hears of it.
	deadline := time.Now().Add(10 * time.Second)
	for p.Lost() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var n int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows after the lost reply: %d, %v; want 1", n, err)
	}
	// Later connections through the proxy work as usual.
	again := connect(t, ctx, p.URL())
	if _, err := again.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Errorf("after the lost reply: %v", err)
	}
}
