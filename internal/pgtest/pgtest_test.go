package pgtest

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/logtally/logtally/internal/poll"
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

// lostCommit makes table t in a database of the test's own, after the
// SQL of setup, and inserts a row through a proxy that loses the reply to
// the COMMIT. It returns a direct connection, the proxy, and the lost
// connection, closed by now.
func lostCommit(t *testing.T, ctx context.Context, setup string) (direct *pgx.Conn, p *Proxy, lost *pgx.Conn) {
	t.Helper()
	url := Database(t)
	direct = connect(t, ctx, url)
	if _, err := direct.Exec(ctx, "CREATE TABLE t (x int);"+setup); err != nil {
		t.Fatal(err)
	}
	p = NewProxy(t, url)
	lost = connect(t, ctx, p.URL())
	tx, err := lost.Begin(ctx)
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
	return direct, p, lost
}

// TestProxyLosesCommitReply checks the proxy's one trick: the client's
// COMMIT fails, yet the transaction is committed.
func TestProxyLosesCommitReply(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	direct, p, _ := lostCommit(t, ctx, "")
	// The server finishes the commit although the client never hears of it.
	if err := p.AwaitLost(ctx, 1); err != nil {
		t.Fatal(err)
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

// TestProxyDropsCancelOfLostCommit sends, while a slow COMMIT whose reply
// the proxy lost is still running, the cancel request a client sends when
// it sees its connection cut: the proxy drops it, and the commit is done.
// (pgconn sends one at once; it usually reaches the server before the
// COMMIT does, and is ignored, but now and then it cancelled the commit.)
func TestProxyDropsCancelOfLostCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	direct, p, lost := lostCommit(t, ctx, `
		CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_sleep(2); RETURN NULL; END$$;
		CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow()`)
	pid, key := lost.PgConn().PID(), lost.PgConn().SecretKey()
	poll.Until(t, "the COMMIT to run", func() bool {
		var running bool
		err := direct.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND state = 'active')", pid).Scan(&running)
		return err == nil && running
	})
	// A CancelRequest: length, code, process ID, secret key.
	req := binary.BigEndian.AppendUint32(nil, uint32(12+len(key)))
	req = binary.BigEndian.AppendUint32(req, cancelRequestCode)
	req = append(binary.BigEndian.AppendUint32(req, pid), key...)
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, c) // closed once dropped, or once the server has it
	c.Close()
	if err := p.AwaitLost(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows after the lost reply and a cancel request: %d, %v; want 1", n, err)
	}
}

func TestMain(m *testing.M) { Main(m) }

// TestDatabase checks what tests sharing the server rely on: each has a
// database of its own, on one server, and it is gone after the test.
func TestDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var urls []string
	for i := range 2 {
		t.Run("own", func(t *testing.T) {
			url := Database(t)
			urls = append(urls, url)
			conn := connect(t, ctx, url)
			if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
				t.Fatalf("database %d: %v (a table left by another test?)", i, err)
			}
		})
	}
	if len(urls) != 2 || urls[0] == urls[1] {
		t.Fatalf("databases %q, want two different ones", urls)
	}
	var left int
	err := connect(t, ctx, shared.srv.URL()).QueryRow(ctx,
		"SELECT count(*) FROM pg_database WHERE datname LIKE '%testdatabase\\_own%'").Scan(&left)
	if err != nil || left != 0 {
		t.Errorf("%d databases left after their tests, %v; want them dropped", left, err)
	}
}

func TestDatabaseName(t *testing.T) {
	for _, tt := range []struct {
		test string
		n    int64
		want string
	}{
		{"TestApply/UTC", 3, "t3_testapply_utc"},
		{"TestNodeResync/name_reused", 12, "t12_testnoderesync_name_reused"},
		{strings.Repeat("TestLong", 20), 1, "t1_" + strings.Repeat("testlong", 20)[:60]},
	} {
		if got := databaseName(tt.test, tt.n); got != tt.want {
			t.Errorf("databaseName(%q, %d) = %q, want %q", tt.test, tt.n, got, tt.want)
		}
	}
}
