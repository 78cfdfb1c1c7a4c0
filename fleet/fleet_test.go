package fleet

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/logtally/logtally/internal/pgtest"
)

// TestMain stops the PostgreSQL server the tests share (pgtest.Database)
// after them.
func TestMain(m *testing.M) { pgtest.Main(m) }

// testVerifier is the visitor secret's verifier of the tests' nodes.
const testVerifier = "verifier of the test secret"

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// pinClock returns url with the database's clock pinned at at (see dbNow).
func pinClock(url string, at time.Time) string {
	return url + "&options=" + strings.ReplaceAll(neturl.QueryEscape("-c logtally.now="+at.UTC().Format(time.RFC3339Nano)), "+", "%20")
}

// open opens a store on url for node, with its clock and the database's at
// now.
func open(t testing.TB, url, node string, now time.Time) *Store {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node = pinClock(url, now), node
	s, err := Open(testContext(t), cfg, discard())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s.Now = func() time.Time { return now }
	t.Cleanup(s.Close)
	return s
}

func TestConfigFlags(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("logtally", flag.ContinueOnError)
	var c Config
	c.RegisterFlags(fs)
	if c.Enabled() {
		t.Error("fleet mode on by default")
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate with fleet mode off: %v", err)
	}
	if err := fs.Parse([]string{"--fleet", "postgres://u:secret@db/logtally", "--node", "web-1", "--fleet-refresh", "2s",
		"--fleet-max-outbox", "10"}); err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.URL, want.Node, want.Refresh, want.MaxOutbox = "postgres://u:secret@db/logtally", "web-1", 2*time.Second, 10
	if c != want {
		t.Errorf("config = %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	bad := c
	bad.URL, bad.Node, bad.Refresh, bad.Window, bad.VisitorSpan, bad.TZ = "postgres://u:secret@db:notaport/x", "", 0, 1500*time.Millisecond, time.Minute, "Mars/Olympus"
	err := bad.Validate()
	for _, want := range []string{"fleet URL", "node", "refresh", "window", "visitor span", "zone"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to mention %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("Validate leaks the password: %v", err)
	}
}

// TestOpenCreatesSchemaOnce opens the same database from several nodes at
// once and again: the schema is created once, the first node's verifier
// is the fleet's, and the version is recorded.
func TestOpenCreatesSchemaOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	ctx := testContext(t)
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cfg := DefaultConfig()
			cfg.Verifier = testVerifier
			cfg.URL, cfg.Node = url, "node"
			stores[i], errs[i] = Open(ctx, cfg, discard())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	again := open(t, url, "late", time.Now())
	for i, s := range append(stores, again) {
		if !s.SameSecret() {
			t.Errorf("store %d: not the fleet's secret", i)
		}
	}
	var versions []int32
	rows, err := again.pool.Query(ctx, "SELECT version FROM logtally.schema_version ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int32
		rows.Scan(&v)
		versions = append(versions, v)
	}
	if rows.Err() != nil || len(versions) != SchemaVersion || versions[len(versions)-1] != int32(SchemaVersion) {
		t.Errorf("schema versions %v (%v), want 1..%d once each", versions, rows.Err(), SchemaVersion)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	s := open(t, url, "a", time.Now())
	ctx := testContext(t)
	if _, err := s.pool.Exec(ctx, "INSERT INTO logtally.schema_version (version) VALUES ($1)", SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node = url, "b"
	if _, err := Open(ctx, cfg, discard()); !errors.Is(err, ErrSchema) {
		t.Errorf("Open = %v, want ErrSchema", err)
	}
}

func TestOpenKeepsFleetZone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node, cfg.TZ = pgtest.Database(t), "a", "Europe/Paris"
	first, err := Open(ctx, cfg, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	cfg.Node, cfg.TZ = "b", "Asia/Tokyo"
	second, err := Open(ctx, cfg, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if got := second.Location().String(); got != "Europe/Paris" {
		t.Errorf("second node's zone %s, want the fleet's, Europe/Paris", got)
	}
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node = "postgres://nobody:secret@127.0.0.1:1/x?connect_timeout=2", "a"
	_, err := Open(testContext(t), cfg, discard())
	if err == nil {
		t.Fatal("Open succeeded without a server")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the password: %v", err)
	}
}

// TestUpgradeDropsSalt opens a fleet database of schema version 2, as the
// logtally before keyed hashes made it (its settings holding the fleet's
// salt): version 3 drops the salt, the first node's verifier is stored,
// and the counts stay.
func TestUpgradeDropsSalt(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE SCHEMA logtally;
		CREATE TABLE logtally.schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	for v := range 2 {
		if err == nil {
			_, err = conn.Exec(ctx, migrations[v])
		}
		if err == nil {
			_, err = conn.Exec(ctx, "INSERT INTO logtally.schema_version (version) VALUES ($1)", v+1)
		}
	}
	if err == nil {
		_, err = conn.Exec(ctx, `INSERT INTO logtally.settings (salt, tz) VALUES (-1234567, 'UTC');
			INSERT INTO logtally.days (site, day, node, pageviews, visitors) VALUES ('default', '2026-03-05', 'a', 7, 3)`)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, url, "a", time.Unix(t0, 0))
	if !s.SameSecret() {
		t.Error("the first node's verifier is not the fleet's")
	}
	var cols string
	err = conn.QueryRow(ctx, `SELECT string_agg(column_name, ' ' ORDER BY column_name) FROM information_schema.columns
		WHERE table_schema = 'logtally' AND table_name = 'settings'`).Scan(&cols)
	if err != nil || cols != "created_at id tz verifier" {
		t.Errorf("settings columns %q, %v; want no salt", cols, err)
	}
	var visitors int64
	if err := conn.QueryRow(ctx, "SELECT visitors FROM logtally.days").Scan(&visitors); err != nil || visitors != 3 {
		t.Errorf("a day's visitors after the upgrade: %d, %v", visitors, err)
	}
}
