// Package fleet keeps the counts of many logtally nodes in one PostgreSQL
// database, so that a site served by several machines has one number: its
// distinct visitors and page views in the live window, to the second, and
// one history.
//
// The one idea: what a node ships and how far it has shipped commit
// together, in one PostgreSQL transaction. Each node numbers the batches it
// commits locally (1, 2, 3, ...); Apply adds a batch's counts and moves the
// node's cursor to its number in the same transaction, after locking the
// cursor. A batch at or below the cursor was applied before and is
// acknowledged without being applied again; one further ahead than the next
// number is a gap (ErrGap). So a node that crashes, loses its connection or
// never hears the reply to its COMMIT just sends the batch again, and it is
// counted exactly once.
//
// Counts that add up (requests, page views, bytes, ...) are kept per node
// and summed on read, so nodes never wait on each other's rows. What must
// be counted once across nodes (visitor sets per minute, hour and day, each
// visitor's latest page view, page views per path) is kept once per site and
// upserted. All nodes hash a visitor with the key of its day, derived from
// one secret that every node is given and the database never holds, so
// one visitor is one hash a day across the fleet. The schema is in
// schema/*.sql.
//
// Reads (Window, Series, PathCounts) answer for the whole fleet. A
// Refresher reads the live window at most once per Config.Refresh and
// publishes it, so that an HTTP handler reads the last answer and never
// waits on PostgreSQL.
//
// A Node is a daemon's part in all this: it checks the fleet's secret, ships
// the node's outbox (the batches its local store committed, numbered in
// the same transactions) in order, retrying whatever fails, and runs the
// Refresher and the pruner.
package fleet

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults for Config.
const (
	DefaultRefresh         = time.Second
	DefaultMaxOutbox       = 86_400 // a day of commits at one a second
	DefaultWindow          = 10 * time.Minute
	DefaultMaxSkew         = 2 * time.Minute
	DefaultTZ              = "UTC"
	DefaultMinuteRetention = 14 * 24 * time.Hour
	DefaultHourRetention   = 400 * 24 * time.Hour
	DefaultVisitorSpan     = 48 * time.Hour
)

// Config configures fleet mode. Fleet mode is on when URL is set.
type Config struct {
	URL  string // PostgreSQL connection URL (postgres://user:pass@host/db); empty: fleet mode off
	Node string // this node's name in the fleet, unique and stable across restarts

	// Refresh is the shortest time between two reads of the fleet's live
	// window from PostgreSQL.
	Refresh time.Duration
	// MaxOutbox is the most batches a node keeps waiting to be shipped
	// while PostgreSQL cannot be reached; past it, reading logs pauses.
	MaxOutbox int

	Window  time.Duration // length of the live window, whole seconds
	MaxSkew time.Duration // how far in the future a line may be: seconds are kept this much longer
	// TZ is the zone of the fleet's days. It is fixed when the fleet
	// database is created; later nodes use the stored zone.
	TZ string

	MinuteRetention time.Duration // minutes older than this are pruned
	HourRetention   time.Duration // hours and per-day page views older than this are pruned
	DayRetention    time.Duration // days older than this are pruned; 0 keeps them
	// VisitorSpan is how long the visitor sets of a minute, hour or day are
	// kept after it ends. Until then a late batch adds its visitors
	// exactly; after, its visitors are left out and the bucket says it is
	// approximate.
	VisitorSpan time.Duration

	// Verifier is HMAC-SHA-256(secret, "logtally verifier") of the
	// node's --visitor-secret-file (keyring.Secret.Verifier): the first
	// node stores it, the others must match it. The program sets it.
	Verifier string

	// TakeOver lets this node's database take the place of the one
	// registered under Node (a database replacing a lost one): it takes
	// that one's identity, cursor and read positions (see Node.Check).
	TakeOver bool

	// Site is the site the fleet's answers are for: logtally.DefaultSite,
	// or with sites counted apart logtally.AllSites. The program sets it;
	// every site's batches are shipped either way.
	Site string
}

// DefaultConfig returns the documented defaults, with the host name as the
// node's name. URL is empty: fleet mode is off.
func DefaultConfig() Config {
	return Config{
		Node:            DefaultNode(),
		Refresh:         DefaultRefresh,
		MaxOutbox:       DefaultMaxOutbox,
		Window:          DefaultWindow,
		MaxSkew:         DefaultMaxSkew,
		TZ:              DefaultTZ,
		MinuteRetention: DefaultMinuteRetention,
		HourRetention:   DefaultHourRetention,
		VisitorSpan:     DefaultVisitorSpan,
	}
}

// DefaultNode returns the host name, the default node name.
func DefaultNode() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "node"
	}
	return h
}

// RegisterFlags registers fleet mode's flags on fs. The window length, skew
// and retention follow the local store's and window's flags; the daemon
// copies them in.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	*c = d
	fs.StringVar(&c.URL, "fleet", "", "PostgreSQL `URL` of the fleet database: count the whole fleet there (default: off)")
	fs.StringVar(&c.Node, "node", d.Node, "this node's `name` in the fleet: unique, and the same across restarts")
	fs.DurationVar(&c.Refresh, "fleet-refresh", d.Refresh, "shortest time between two reads of the fleet's live counts")
	fs.BoolVar(&c.TakeOver, "fleet-take-over", false,
		"this database replaces the one that shipped as --node (lost, or restored from a backup): take its place and read positions")
	fs.IntVar(&c.MaxOutbox, "fleet-max-outbox", d.MaxOutbox,
		"most commits waiting to be shipped while the fleet database is unreachable; past it, reading pauses")
}

// Enabled reports whether fleet mode is on.
func (c Config) Enabled() bool { return c.URL != "" }

// MaxNodeLength is the longest node name.
const MaxNodeLength = 200

// Validate reports what is wrong with the configuration, if fleet mode is
// on. It changes nothing.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if _, err := pgxpool.ParseConfig(c.URL); err != nil {
		errs = append(errs, fmt.Errorf("fleet URL: %v", redact(err)))
	}
	if c.Node == "" || len(c.Node) > MaxNodeLength || strings.ContainsFunc(c.Node, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		errs = append(errs, fmt.Errorf("node %q: must be 1 to %d printable bytes", c.Node, MaxNodeLength))
	}
	if c.Refresh <= 0 {
		errs = append(errs, fmt.Errorf("fleet refresh %s: must be positive", c.Refresh))
	}
	if c.MaxOutbox < 1 {
		errs = append(errs, fmt.Errorf("fleet max outbox %d: must be at least 1", c.MaxOutbox))
	}
	if c.Window < time.Second || c.Window%time.Second != 0 {
		errs = append(errs, fmt.Errorf("window %s: must be whole seconds, at least 1s", c.Window))
	}
	if c.MaxSkew < 0 {
		errs = append(errs, fmt.Errorf("max skew %s: must not be negative", c.MaxSkew))
	}
	if c.TZ != "" {
		if _, err := time.LoadLocation(c.TZ); err != nil {
			errs = append(errs, fmt.Errorf("fleet zone %q: %w", c.TZ, err))
		}
	}
	if c.MinuteRetention < 0 || c.HourRetention < 0 || c.DayRetention < 0 {
		errs = append(errs, errors.New("retention must not be negative"))
	}
	if c.VisitorSpan < time.Hour {
		errs = append(errs, fmt.Errorf("visitor span %s: must be at least 1h", c.VisitorSpan))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Node == "" {
		c.Node = d.Node
	}
	if c.Refresh <= 0 {
		c.Refresh = d.Refresh
	}
	if c.MaxOutbox <= 0 {
		c.MaxOutbox = d.MaxOutbox
	}
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if c.TZ == "" {
		c.TZ = d.TZ
	}
	if c.MinuteRetention == 0 {
		c.MinuteRetention = d.MinuteRetention
	}
	if c.HourRetention == 0 {
		c.HourRetention = d.HourRetention
	}
	if c.VisitorSpan == 0 {
		c.VisitorSpan = d.VisitorSpan
	}
	return c
}

// redact keeps a password in a URL out of an error message.
func redact(err error) string {
	s := err.Error()
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.Index(s[i+3:], "@"); j >= 0 {
			s = s[:i+3] + "..." + s[i+3+j:]
		}
	}
	return s
}

var (
	// ErrGap means a node shipped a batch further ahead than the next one
	// its cursor expects: batches in between are missing, so applying it
	// would lose them. Shipping stops until the missing ones are sent.
	ErrGap = errors.New("batch sequence gap")
	// ErrSchema means the fleet database was created or upgraded by a newer
	// logtally than this one. It is left untouched.
	ErrSchema = errors.New("fleet database schema is newer than this logtally")
)

// SchemaVersion is the schema version this code reads and writes: the
// number of files in schema/.
var SchemaVersion = len(migrations)

//go:embed schema/*.sql
var schemaFS embed.FS

// migrations are the schema files, in version order: file N_*.sql brings
// the schema from version N-1 to N.
var migrations = func() []string {
	names, err := fs.Glob(schemaFS, "schema/*.sql")
	if err != nil {
		panic(err)
	}
	version := func(name string) int {
		n, err := strconv.Atoi(strings.SplitN(path.Base(name), "_", 2)[0])
		if err != nil {
			panic("schema file " + name + " does not start with its version")
		}
		return n
	}
	slices.SortFunc(names, func(a, b string) int { return version(a) - version(b) })
	out := make([]string, len(names))
	for i, name := range names {
		if version(name) != i+1 {
			panic(fmt.Sprintf("schema file %s: want version %d", name, i+1))
		}
		b, err := schemaFS.ReadFile(name)
		if err != nil {
			panic(err)
		}
		out[i] = string(b)
	}
	return out
}()

// schemaLock is the advisory lock key under which the schema is created and
// upgraded: "logtally" in ASCII.
const schemaLock = 0x6c6f6774616c6c79

// Store is a connection to the fleet database. It is safe for concurrent
// use.
type Store struct {
	cfg  Config
	log  *slog.Logger
	pool *pgxpool.Pool
	// verifier is the fleet's secret's verifier, as the first node to
	// start with a secret stored it.
	verifier string
	loc      *time.Location

	// Now is the clock that decides which visitor sets are still kept when
	// a batch is applied, and which series points are exact. Set it before
	// using the store, if at all; time.Now by default.
	Now func() time.Time

	// clock is this node's clock against the database's: see clock.go.
	clock clock
	// sent is what each node added to the recent visitor sets: see sent.go.
	sent sentSets
}

// Open connects to the fleet database, creates or upgrades its schema and,
// on first start, the fleet's settings. The schema is changed in a
// transaction under an advisory lock, so nodes starting together wait for
// each other; only a newer logtally's schema is refused (ErrSchema).
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.URL == "" {
		return nil, errors.New("fleet: no database URL")
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("fleet URL: %s", redact(err))
	}
	if _, ok := pc.ConnConfig.RuntimeParams["application_name"]; !ok {
		pc.ConnConfig.RuntimeParams["application_name"] = "logtally " + cfg.Node
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	s := &Store{cfg: cfg, log: logger, pool: pool, Now: time.Now}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// migrate brings the schema to SchemaVersion and reads the fleet's
// settings, creating them on first start.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
		return fmt.Errorf("fleet: schema lock: %w", err)
	}
	_, err = tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS logtally;
		CREATE TABLE IF NOT EXISTS logtally.schema_version (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`)
	if err != nil {
		return fmt.Errorf("fleet: schema: %w", err)
	}
	var have int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM logtally.schema_version").Scan(&have); err != nil {
		return fmt.Errorf("fleet: schema version: %w", err)
	}
	if have > SchemaVersion {
		return fmt.Errorf("fleet: schema version %d, this logtally knows %d: %w", have, SchemaVersion, ErrSchema)
	}
	for v := have + 1; v <= SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
			return fmt.Errorf("fleet: schema version %d: %w", v, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO logtally.schema_version (version) VALUES ($1)", v); err != nil {
			return fmt.Errorf("fleet: schema version %d: %w", v, err)
		}
		s.log.Info("fleet: schema upgraded", "version", v)
	}
	var tz string
	var verifier []byte
	if tz, verifier, err = s.settings(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("fleet: schema: %w", err)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return fmt.Errorf("fleet: stored zone %q: %w", tz, err)
	}
	if tz != s.cfg.TZ {
		s.log.Warn("fleet: days follow the fleet's zone, not this node's", "fleet_tz", tz, "node_tz", s.cfg.TZ)
	}
	s.verifier, s.loc = string(verifier), loc
	return nil
}

// settings reads the fleet's zone and its secret's verifier, creating the
// settings row on first start and storing this node's verifier if none
// is stored yet.
func (s *Store) settings(ctx context.Context, tx pgx.Tx) (tz string, verifier []byte, err error) {
	_, err = tx.Exec(ctx, "INSERT INTO logtally.settings (tz) VALUES ($1) ON CONFLICT DO NOTHING", s.cfg.TZ)
	if err == nil && s.cfg.Verifier != "" {
		_, err = tx.Exec(ctx, "UPDATE logtally.settings SET verifier = $1 WHERE verifier IS NULL", []byte(s.cfg.Verifier))
	}
	if err == nil {
		err = tx.QueryRow(ctx, "SELECT tz, verifier FROM logtally.settings").Scan(&tz, &verifier)
	}
	if err != nil {
		return "", nil, fmt.Errorf("fleet: settings: %w", err)
	}
	return tz, verifier, nil
}

// SameSecret reports whether this node's secret is the fleet's: whether
// its verifier is the one stored.
func (s *Store) SameSecret() bool {
	return s.cfg.Verifier != "" && subtle.ConstantTimeCompare([]byte(s.verifier), []byte(s.cfg.Verifier)) == 1
}

// Location returns the zone of the fleet's days.
func (s *Store) Location() *time.Location { return s.loc }

// Config returns the store's configuration, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Close closes the store's connections.
func (s *Store) Close() { s.pool.Close() }

// LastSeq returns the number of the last batch applied of the node
// called name, 0 if none: how far the node has shipped.
func (s *Store) LastSeq(ctx context.Context, name string) (uint64, error) {
	var last int64
	err := s.pool.QueryRow(ctx, "SELECT last_seq FROM logtally.nodes WHERE name = $1", name).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fleet: cursor of %s: %w", name, err)
	}
	return uint64(last), nil
}
