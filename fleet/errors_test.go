package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/tally"
)

// TestBlockedBy tells the errors that retrying mends from those that block
// until someone acts, by SQLSTATE as PostgreSQL gives them.
func TestBlockedBy(t *testing.T) {
	pg := func(code string) error {
		return fmt.Errorf("fleet: apply web-1/7: %w", &pgconn.PgError{Severity: "ERROR", Code: code, Message: "m"})
	}
	tests := []struct {
		name string
		err  error
		fix  string // "" for transient
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, ""},
		{"timeout", fmt.Errorf("fleet: apply: %w", context.DeadlineExceeded), ""},
		{"connection lost", io.ErrUnexpectedEOF, ""},
		{"connection failure 08006", pg("08006"), ""},
		{"cannot connect 08001", pg("08001"), ""},
		{"serialization failure 40001", pg("40001"), ""},
		{"deadlock 40P01", pg("40P01"), ""},
		{"admin shutdown 57P01", pg("57P01"), ""},
		{"crash shutdown 57P02", pg("57P02"), ""},
		{"cannot connect now 57P03", pg("57P03"), ""},
		{"statement timeout 57014", pg("57014"), ""},
		{"too many connections 53300", pg("53300"), ""},
		{"disk full 53100", pg("53100"), ""},
		{"lock not available 55P03", pg("55P03"), ""},
		{"io error 58030", pg("58030"), ""},
		{"internal error XX000", pg("XX000"), ""},
		{"not UTF-8 22021", pg("22021"), "a batch holds a value PostgreSQL refuses"},
		{"untranslatable 22P05", pg("22P05"), "a batch holds a value PostgreSQL refuses"},
		{"unique violation 23505", pg("23505"), "breaks a constraint"},
		{"syntax error 42601", pg("42601"), "changed outside logtally"},
		{"undefined table 42P01", pg("42P01"), "changed outside logtally"},
		{"insufficient privilege 42501", pg("42501"), "GRANT CREATE ON DATABASE fleet TO logtally"},
		{"wrong password 28P01", pg("28P01"), "check the role (logtally) and its password in the --fleet URL"},
		{"no pg_hba entry 28000", pg("28000"), "pg_hba.conf"},
		{"no database 3D000", pg("3D000"), "createdb -O logtally fleet"},
		{"no schema 3F000", pg("3F000"), "schema logtally was dropped"},
		{"index row too big 54000", pg("54000"), "over a limit"},
		{"bad outbox entry", fmt.Errorf("fleet: outbox entry 3: %w", tally.ErrBadBatch), "cannot be decoded"},
		{"newer schema", fmt.Errorf("fleet: schema version 9: %w", ErrSchema), "upgrade logtally"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := blockedBy(tt.err, "postgres://logtally@db.example/fleet")
			switch {
			case tt.fix == "" && b != nil:
				t.Fatalf("blockedBy(%v) = %v, want transient", tt.err, b)
			case tt.fix == "":
				return
			case b == nil:
				t.Fatalf("blockedBy(%v) = transient, want blocked", tt.err)
			case !strings.Contains(b.Fix, tt.fix) || !errors.Is(b, tt.err) || blockedBy(b, "") != b:
				t.Fatalf("blockedBy(%v) = %v, want a fix with %q", tt.err, b, tt.fix)
			}
		})
	}
}

// logCount counts the records of a level a logger writes.
type logCount struct {
	slog.Handler
	mu    sync.Mutex
	level slog.Level
	n     int
	last  slog.Record
}

func newLogCount(level slog.Level) *logCount {
	return &logCount{Handler: slog.NewTextHandler(io.Discard, nil), level: level}
}

func (c *logCount) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == c.level {
		c.mu.Lock()
		c.n++
		c.last = r.Clone()
		c.mu.Unlock()
	}
	return nil
}

func (c *logCount) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// attr returns an attribute of the last record counted.
func (c *logCount) attr(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var v string
	c.last.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
		}
		return true
	})
	return v
}

// withDatabase returns u with another database name and role.
func withDatabase(t *testing.T, u, db, role string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Path, p.User = "/"+db, url.User(role)
	return p.String()
}

// exec runs statements on the database of u.
func exec(t *testing.T, u string, sqls ...string) {
	t.Helper()
	conn, err := pgx.Connect(testContext(t), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, sql := range sqls {
		if _, err := conn.Exec(testContext(t), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// startBlockedNode starts a node of u on a store with one batch, blocked
// nodes retrying at once, and waits until it is blocked with code.
func startBlockedNode(t *testing.T, u, code string, log *logCount) *Node {
	t.Helper()
	local := localStore(t)
	w := generate(rand.New(rand.NewPCG(71, 72)), 1, 1, 50)
	if err := local.Commit(w.batches[0][0]); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node, cfg.Refresh = u, nodeName(0), 50*time.Millisecond
	n := NewNode(cfg, local.Outbox(), slog.New(log), func() time.Time { return time.Unix(t0+liveSpan, 0) })
	n.blockedRetry = 10 * time.Millisecond
	n.Start(testContext(t))
	t.Cleanup(n.Close)
	poll.Until(t, "the node to be blocked, and tried again", func() bool {
		st := n.Stats()
		return st.State == StateBlocked && st.Failures >= 3
	})
	var b *BlockedError
	if st := n.Stats(); !errors.As(st.LastError, &b) || b.Code != code {
		t.Fatalf("last error %v, want a BlockedError with SQLSTATE %s", st.LastError, code)
	}
	if got := log.count(); got != 1 {
		t.Errorf("%d ERROR lines for one error tried again %d times, want 1", got, n.Stats().Failures)
	}
	return n
}

// TestConnectMissingDatabase: a --fleet URL that names a database that
// does not exist blocks the node (not "retrying" forever) with the fix in
// its status and one ERROR line; once the database is made, the node
// connects and ships without a restart.
func TestConnectMissingDatabase(t *testing.T) {
	t.Parallel()
	admin := pgtest.Database(t)
	p, _ := url.Parse(admin)
	db := strings.TrimPrefix(p.Path, "/") + "_later"
	t.Cleanup(func() { exec(t, admin, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	log := newLogCount(slog.LevelError)
	n := startBlockedNode(t, withDatabase(t, admin, db, "postgres"), "3D000", log)
	var b *BlockedError
	errors.As(n.Stats().LastError, &b)
	if want := "createdb -O postgres " + db; !strings.Contains(b.Fix, want) {
		t.Errorf("fix %q, want it to say %q", b.Fix, want)
	}
	if got := log.attr("sqlstate"); got != "3D000" {
		t.Errorf("the ERROR line names SQLSTATE %q, want 3D000", got)
	}
	exec(t, admin, "CREATE DATABASE "+db)
	poll.Until(t, "the node to ship once the database exists", func() bool { return shippedAll(n, 1) })
}

// TestConnectWithoutPrivilege: a role that may not create the fleet's
// schema blocks the node with SQLSTATE 42501 and the GRANT to give it.
func TestConnectWithoutPrivilege(t *testing.T) {
	t.Parallel()
	admin := pgtest.Database(t)
	p, _ := url.Parse(admin)
	db := strings.TrimPrefix(p.Path, "/")
	const role = "logtally_nopriv"
	exec(t, admin, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() { exec(t, admin, "DROP OWNED BY "+role, "DROP ROLE "+role) })
	n := startBlockedNode(t, withDatabase(t, admin, db, role), "42501", newLogCount(slog.LevelError))
	var b *BlockedError
	errors.As(n.Stats().LastError, &b)
	if want := "GRANT CREATE ON DATABASE " + db + " TO " + role; !strings.Contains(b.Fix, want) {
		t.Errorf("fix %q, want it to say %q", b.Fix, want)
	}
	exec(t, admin, "GRANT CREATE ON DATABASE "+db+" TO "+role)
	poll.Until(t, "the node to ship once granted", func() bool { return shippedAll(n, 1) })
}

// TestConnectWrongPassword: a wrong password in the --fleet URL blocks the
// node with SQLSTATE 28P01 and says to check it; once the role's password
// is what the URL says (and the role may create the schema), the node
// ships without a restart.
func TestConnectWrongPassword(t *testing.T) {
	t.Parallel()
	// The server trusts its superuser and asks every other role for a
	// password; postgres (not root) reads the file.
	dir := t.TempDir()
	hba := filepath.Join(dir, "pg_hba.conf")
	err := os.WriteFile(hba, []byte("local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"), 0o644)
	if err != nil || os.Chmod(dir, 0o755) != nil {
		t.Fatal(err)
	}
	srv := pgtest.Start(t, "hba_file="+hba)
	exec(t, srv.URL(), "CREATE ROLE fleet LOGIN PASSWORD 'right'")
	u, _ := url.Parse(srv.URL())
	u.User = url.UserPassword("fleet", "wrong")
	n := startBlockedNode(t, u.String(), "28P01", newLogCount(slog.LevelError))
	var b *BlockedError
	errors.As(n.Stats().LastError, &b)
	if want := "check the role (fleet) and its password in the --fleet URL"; !strings.Contains(b.Fix, want) {
		t.Errorf("fix %q, want it to say %q", b.Fix, want)
	}
	exec(t, srv.URL(), "ALTER ROLE fleet PASSWORD 'wrong'", "GRANT CREATE ON DATABASE postgres TO fleet")
	poll.Until(t, "the node to ship once the password is right", func() bool { return shippedAll(n, 1) })
}

// TestShipRefusedBatchBlocks: a batch PostgreSQL refuses (a path with a
// byte that is not UTF-8, as a logtally before escaping committed) blocks
// the node, SQLSTATE 22021 with one ERROR line, rather than being retried
// with backoff for ever as a transient error would be; the batches after it
// wait behind it in the outbox.
func TestShipRefusedBatchBlocks(t *testing.T) {
	t.Parallel()
	local := localStore(t)
	b := tally.NewBatch()
	b.Add(&logtally.Hit{Time: t0, Visitor: 1, Path: []byte("/caf\xe9"), Status: 200, PageView: true}, true)
	b.AddLines(1)
	w := generate(rand.New(rand.NewPCG(81, 82)), 1, 1, 20)
	if err := local.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := local.Commit(w.batches[0][0]); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node, cfg.Refresh = pgtest.Database(t), nodeName(0), 50*time.Millisecond
	log := newLogCount(slog.LevelError)
	n := NewNode(cfg, local.Outbox(), slog.New(log), func() time.Time { return time.Unix(t0+liveSpan, 0) })
	n.blockedRetry = 10 * time.Millisecond
	n.Start(testContext(t))
	t.Cleanup(n.Close)
	poll.Until(t, "the node to be blocked, and tried again", func() bool {
		st := n.Stats()
		return st.State == StateBlocked && st.Failures >= 3
	})
	var be *BlockedError
	if st := n.Stats(); !errors.As(st.LastError, &be) || be.Code != "22021" || st.Outbox.Entries != 2 || st.Applied != 0 {
		t.Fatalf("stats %+v, want blocked on SQLSTATE 22021 with both batches waiting", st)
	}
	if got := log.count(); got != 1 || log.attr("sqlstate") != "22021" {
		t.Errorf("%d ERROR lines (the last naming SQLSTATE %q) for one error tried again, want 1 naming 22021",
			got, log.attr("sqlstate"))
	}
}
