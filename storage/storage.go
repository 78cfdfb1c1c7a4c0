// Package storage persists per-minute counts, their hourly and daily
// rollups, per-path page views and each log file's read position in one
// embedded bbolt file, for one site or several: each site has buckets of
// its own (see Site), the read positions are the file's.
//
// The idea that makes it crash-safe: everything a batch of lines produced
// (minute, hour and day deltas, per-path counts, the live window's
// per-second state) and the file offsets just after those lines are written
// in the same bbolt transaction, for the batches of every site a commit
// holds. The access log itself is the durable queue; after any crash,
// reading resumes at the last committed offset, and nothing is lost or
// counted twice.
//
// Per-path counts are the one thing a commit does not merge in place: it
// appends them to a path log, which compaction merges into the per-path
// shards later, in a transaction that deletes what it merged (see
// pathlog.go). The log is held in memory, summed, for queries, and is
// bounded: past its bounds a commit compacts it itself.
package storage

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this code reads and writes. Version 2
// added the path log; Open upgrades a version 1 file by adding it empty,
// after which a version 1 program refuses the file rather than miss the
// page views the log holds. Version 3 stores the retention in force and the
// newest line's time, which retention follows (see retention.go); a version
// 2 program, which prunes by the clock, refuses it rather than delete what
// the stored retention keeps. Version 4 holds no visitor-hash salt:
// visitors are hashed with keys of their day kept outside the file (see
// package keyring), and Open destroys an older file's salt (see salt.go).
// Version 5 writes minutes, hours and days with a checksum (record
// encoding 2, see record.go) and stores the zone days are cut in (see
// zone.go); a version 4 program would take a checksummed record for a
// damaged one, so it refuses the file instead. Open upgrades a version 4
// file by writing the version: its records are read as they are. Version 6
// stores a minute's exact visitor set in its record, in place of the
// sketch the set stands for, rather than apart in a bucket of visitor
// sets (see sets.go): one value a site-minute, not two. A version 5
// program would take such a record for a damaged one and find no set, so
// it refuses the file. Open upgrades a version 5 file in place: it writes
// the version, then moves each kept set into its minute's record and
// drops the sets' buckets, in transactions of its own (see moveSets).
// Version 7 keeps a site's newest day as its hours alone (see
// lazyday.go): a version 6 program would find no record of the day and
// answer it empty, so it refuses the file. Open upgrades a version 6 file
// by writing the version: its days all have records.
const SchemaVersion = 7

var (
	// ErrSchema means the file was written by an incompatible version of
	// logtally. The file is left untouched.
	ErrSchema = errors.New("unsupported database schema")
	// ErrCorrupt means a stored value cannot be decoded.
	ErrCorrupt = errors.New("corrupt database value")
)

// Config configures the store: plain values. Zero limits and retentions
// take DefaultConfig's in Open.
type Config struct {
	Path string // database file
	// TZ names the zone that days follow, as time.LoadLocation takes it
	// (e.g. Europe/Paris); empty means the zone stored in the file, or,
	// for a new file, the machine's zone (see zone.go).
	TZ string

	TopPages    int // top pages kept per minute; the rest go to Other
	MaxPaths    int // distinct paths with an all-time count; the rest go to logtally.OtherPath
	MaxDayPaths int // distinct paths with a count per day; the rest go to logtally.OtherPath

	// MinuteRetention, HourRetention and DayRetention are how long minutes,
	// hours (and per-day path counts) and days are kept, back from the
	// newest line stored; Forever keeps them, zero takes the default. A
	// span shorter than the one stored in the file is only taken with
	// ApplyRetention (see retention.go).
	MinuteRetention time.Duration
	HourRetention   time.Duration
	DayRetention    time.Duration
	// ApplyRetention takes retention spans shorter than the stored ones,
	// deleting what they expire, rather than keeping the stored ones.
	ApplyRetention bool
	// ExactVisitorsSpan is how far behind the newest stored minute a minute
	// keeps its exact visitor set. A line later than that can only add to
	// the minute's sketch, and the minute's visitors become approximate.
	ExactVisitorsSpan time.Duration

	// Outbox makes each commit also write the batch it committed to the
	// outbox, numbered, for fleet mode's shipper (see Outbox).
	Outbox bool
	// MaxOutbox is the most batches the outbox holds: a commit that finds
	// it holding as many fails with ErrOutboxFull (one that adds several
	// batches may pass it by the rest of them). 0: no limit.
	MaxOutbox int
}

// DefaultConfig returns the defaults: the one place they are written.
func DefaultConfig() Config {
	return Config{
		Path:              "logtally.db",
		TopPages:          100,
		MaxPaths:          1_000_000,
		MaxDayPaths:       100_000,
		MinuteRetention:   14 * 24 * time.Hour,
		HourRetention:     400 * 24 * time.Hour,
		DayRetention:      Forever,
		ExactVisitorsSpan: 2 * time.Hour,
	}
}

// RegisterFlags registers the store's flags on fs, with DefaultConfig's
// values as their defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	c.RegisterReadFlags(fs)
	fs.Lookup("db").Usage = "database `file` (created if missing)"
	c.MinuteRetention, c.HourRetention, c.DayRetention = d.MinuteRetention, d.HourRetention, d.DayRetention
	const back = ", back from the newest line stored, as a `span` such as 30d, 2w or 720h (0: forever)"
	fs.Var(spanValue{&c.MinuteRetention}, "keep-minutes", "how long per-minute history is kept"+back)
	fs.Var(spanValue{&c.HourRetention}, "keep-hours", "how long hourly history and per-day page counts are kept"+back)
	fs.Var(spanValue{&c.DayRetention}, "keep-days", "how long daily history is kept"+back)
	fs.BoolVar(&c.ApplyRetention, "apply-retention", false,
		"take --keep-* spans shorter than those stored in the database, deleting what they expire (without it the stored ones stay in force)")
	fs.IntVar(&c.TopPages, "minute-top-pages", d.TopPages, "top pages stored per minute")
	fs.IntVar(&c.MaxPaths, "max-stored-paths", d.MaxPaths, "distinct paths with an all-time count; more are counted as "+logtally.OtherPath)
	fs.IntVar(&c.MaxDayPaths, "max-day-paths", d.MaxDayPaths, "distinct paths counted per day; more are counted as "+logtally.OtherPath)
}

// RegisterReadFlags registers the flags of a program that only reads the
// store: the file and the zone of its days.
func (c *Config) RegisterReadFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.StringVar(&c.Path, "db", d.Path, "database `file`")
	fs.StringVar(&c.TZ, "tz", d.TZ, "time `zone` that days follow, e.g. Europe/Paris: a new database stores it, and refuses another later (default: the database's; for a new one, the machine's zone)")
}

// Validate checks the configuration. It changes nothing.
func (c Config) Validate() error {
	if c.Path == "" {
		return errors.New("no database file")
	}
	if _, err := c.Location(); err != nil {
		return err
	}
	if c.MinuteRetention < 0 || c.HourRetention < 0 || c.DayRetention < 0 || c.ExactVisitorsSpan < 0 ||
		c.TopPages < 0 || c.MaxPaths < 0 || c.MaxDayPaths < 0 || c.MaxOutbox < 0 {
		return errors.New("storage limits and retention must not be negative")
	}
	return nil
}

// Location returns the zone that days follow: TZ, or the machine's zone if
// TZ is empty.
func (c Config) Location() (*time.Location, error) {
	if c.TZ == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(c.TZ)
	if err != nil {
		return nil, fmt.Errorf("tz %q: %w", c.TZ, err)
	}
	return loc, nil
}

// withDefaults returns c with its zero limits and retentions taken from
// DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	orDefault(&c.TopPages, d.TopPages)
	orDefault(&c.MaxPaths, d.MaxPaths)
	orDefault(&c.MaxDayPaths, d.MaxDayPaths)
	orDefault(&c.MinuteRetention, d.MinuteRetention)
	orDefault(&c.HourRetention, d.HourRetention)
	orDefault(&c.DayRetention, d.DayRetention)
	orDefault(&c.ExactVisitorsSpan, d.ExactVisitorsSpan)
	return c
}

func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Store is an open database. It is safe for concurrent use: bbolt allows one
// writer and many readers at once, and the path log's readers never wait
// for a writer's commit (see pathLog).
//
// A store serves several sites (see Site). It does not limit how many:
// each costs a set of buckets in the file and, in memory, a path log and a
// few maps, so the ingest layer caps them (--max-sites). The read methods
// of Store read logtally.DefaultSite, as a single-site store always did.
type Store struct {
	cfg  Config
	loc  *time.Location   // days are calendar days here
	now  func() time.Time // clock for retention
	db   *bolt.DB
	file fileState
	// upgraded is what Open changed in a file an older logtally made.
	upgraded upgrades
	// commit commits a write transaction: (*bolt.Tx).Commit, unless a test
	// holds commits at a chosen point.
	commit func(*bolt.Tx) error
	// eagerDays has commits store every day's record as schema 6 did,
	// rather than keep the newest as its hours (see lazyday.go): what a
	// test compares lazy days with.
	eagerDays bool

	// writeMu is held by whatever writes counts or a path log (Commit,
	// compaction, folding, CopySite) for its whole length, and by whoever
	// reads the minutes a site's commits wrote. It guards the fields below and each site's
	// writer state, and makes its holder every path log's writer.
	writeMu sync.Mutex
	scratch scratch
	// prepPool holds the scratch of the goroutines that prepare a
	// commit's minutes (see prepareMinutes), which hold no lock.
	prepPool sync.Pool

	sites siteSet
	def   *Site         // logtally.DefaultSite, which every file has
	wake  chan struct{} // asks RunPruner for a compaction (see pathLog.askCompaction)

	held []Held // spans kept longer than asked, decided at Open

	outbox *Outbox
}

// upgrades are what Open changed in a file an older logtally made.
type upgrades struct {
	// saltDropped is set when Open deleted an older file's salt, whose
	// pages it then scrubs (see salt.go).
	saltDropped bool
	// zoneAdopted is set when Open stored the zone of a file that had
	// none (see zone.go).
	zoneAdopted bool
	sets        setsMove // the visitor sets of schema 5 (see moveSets)
}

// Open opens or creates the database cfg.Path. now is the clock that
// retention follows; nil means time.Now. Open reads little of an existing
// file, so that a start costs about the same whatever the file's size:
// bbolt's header pages and free list (see preflight.go), the sites'
// buckets and their path logs. A file damaged there is refused with a
// *DamageError; a page damaged elsewhere makes the query or the commit
// that first reads it fail with one (see guarded), and Check finds it. A
// file that another process has open is refused with ErrLocked, within a
// second.
func Open(cfg Config, now func() time.Time) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	loc, err := cfg.Location()
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	db, file, err := openFile(cfg.Path, false)
	if err != nil {
		return nil, err
	}
	// bbolt grows the file by AllocSize past what its pages need, its
	// mapping being wider than AllocSize (see initialMmap): 16 MiB by
	// default would be most of a small site's file. Growing by 1 MiB costs
	// a truncate and a sync per MiB of data, which is nothing next to the
	// commits that wrote it.
	db.AllocSize = allocSize
	s := newStore(cfg, loc, now, db)
	s.file.info, s.commit = file, (*bolt.Tx).Commit
	err = s.update(func(tx *bolt.Tx) error {
		if err := s.init(tx); err != nil {
			return err
		}
		if err := s.settleRetention(tx); err != nil {
			return err
		}
		return s.openOutbox(tx)
	})
	if err == nil {
		err = s.moveSets()
	}
	if err == nil {
		err = s.scrubSalts()
	}
	if err == nil {
		err = s.view(s.loadLogs)
	}
	var damage *DamageError
	if errors.As(err, &damage) {
		db.Close()
		return nil, err
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	return s, nil
}

func newStore(cfg Config, loc *time.Location, now func() time.Time, db *bolt.DB) *Store {
	return &Store{cfg: cfg.withDefaults(), loc: loc, now: now, db: db, sites: siteSet{m: make(map[string]*Site)},
		wake: make(chan struct{}, 1)}
}

// addSites makes a Site of every site the file holds, its path log not
// loaded yet. It is called once, before the store is used.
func (s *Store) addSites(tx *bolt.Tx) {
	tx.Bucket(bucketSites).ForEach(func(k, v []byte) error {
		if v == nil {
			si := s.newSite(string(k))
			s.sites.m[si.name] = si
		}
		return nil
	})
	s.def = s.sites.m[logtally.DefaultSite]
	s.loadShares(tx)
}

// loadLogs rebuilds every site's path log from the file.
func (s *Store) loadLogs(tx *bolt.Tx) error {
	for _, si := range s.sites.m {
		lb := si.bucket(tx, bucketPathLog)
		if lb == nil {
			continue // a version 1 file, read only
		}
		if err := si.log.load(tx, lb); err != nil {
			return fmt.Errorf("site %s: %w", si.name, err)
		}
	}
	return nil
}

// init checks the schema of an existing file, or lays out a new one.
func (s *Store) init(tx *bolt.Tx) error {
	if meta := tx.Bucket(bucketMeta); meta != nil {
		version, err := s.readSchema(tx)
		if err != nil {
			return err
		}
		if err := s.settleZone(tx, true); err != nil {
			return err
		}
		s.addSites(tx)
		if version == 1 {
			// Version 1 files hold the default site alone.
			site := tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite))
			if _, err := site.CreateBucket(bucketPathLog); err != nil {
				return err
			}
		}
		if version <= 2 {
			if err := s.upgradeRetention(tx); err != nil {
				return err
			}
		}
		if version <= 3 {
			if err := s.dropSalts(tx); err != nil {
				return err
			}
		}
		if version != SchemaVersion {
			return meta.Put(keySchema, u64(SchemaVersion))
		}
		return nil
	}
	if tx.Bucket(bucketPositions) != nil || tx.Bucket(bucketSites) != nil {
		return fmt.Errorf("%w: data without a schema version", ErrSchema)
	}
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(keySchema, u64(SchemaVersion)); err != nil {
		return err
	}
	if err := s.settleZone(tx, true); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketPositions); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketSites); err != nil {
		return err
	}
	if err := createSite(tx, logtally.DefaultSite); err != nil {
		return err
	}
	s.addSites(tx)
	return nil
}

// createSite creates a site's buckets.
func createSite(tx *bolt.Tx, name string) error {
	site, err := tx.Bucket(bucketSites).CreateBucket([]byte(name))
	if err != nil {
		return fmt.Errorf("site %s: %w", name, err)
	}
	for _, b := range siteBuckets {
		if _, err := site.CreateBucket(b); err != nil {
			return fmt.Errorf("site %s: %w", name, err)
		}
	}
	return nil
}

// readSchema reads the schema version of an existing file.
func (s *Store) readSchema(tx *bolt.Tx) (version uint64, err error) {
	meta := tx.Bucket(bucketMeta)
	v := meta.Get(keySchema)
	if len(v) == 8 {
		version = binary.BigEndian.Uint64(v)
	}
	if version < 1 || version > SchemaVersion {
		return 0, fmt.Errorf("%w: found %x, want %d", ErrSchema, v, SchemaVersion)
	}
	if tx.Bucket(bucketSites) == nil || tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)) == nil {
		return 0, fmt.Errorf("site %s missing: %w", logtally.DefaultSite, ErrCorrupt)
	}
	return version, nil
}

// openBolt opens a bbolt file, saying so when another process holds it.
func openBolt(path string, opts *bolt.Options) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, opts)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w (waited %s for its lock)", path, ErrLocked, opts.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// OpenReadOnly opens the database cfg.Path to read it, waiting up to
// timeout for its lock: a running logtally holds the file, and bbolt lets
// no other process open it while it does (ErrLocked). Nothing is written:
// a file of an older schema is read as it is, and the retention in force
// is the stored one.
func OpenReadOnly(cfg Config, timeout time.Duration) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	loc, err := cfg.Location()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return nil, err // bbolt would create it
	}
	db, err := openBolt(cfg.Path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	s := newStore(cfg, loc, time.Now, db)
	err = s.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return fmt.Errorf("%w: no schema version", ErrSchema)
		}
		if _, err := s.readSchema(tx); err != nil {
			return err
		}
		if err := s.settleZone(tx, false); err != nil {
			return err
		}
		if v := tx.Bucket(bucketMeta).Get(keyRetention); v != nil {
			r, err := decodeRetention(v)
			if err != nil {
				return err
			}
			s.cfg.MinuteRetention, s.cfg.HourRetention, s.cfg.DayRetention = r.Minutes, r.Hours, r.Days
		}
		s.addSites(tx)
		return s.loadLogs(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Position returns the committed read offset of a file, and whether there is
// one.
func (s *Store) Position(file string) (offset int64, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketPositions).Get([]byte(file))
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("position %q: %w", file, ErrCorrupt)
		}
		offset, ok = int64(binary.BigEndian.Uint64(v)), true
		return nil
	})
	return offset, ok, err
}

// StreamSince returns the modification time of the oldest file of the
// stream of a followed path (the file at the path and its rotated copies)
// that logtally started to read, and whether it has started: what the
// tailer (tailer.Streams) tells an unread rotated file (newer: rotated
// away before it could be read) from an archive (older) by, after a run
// that was stopped before it committed.
func (s *Store) StreamSince(path string) (since time.Time, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketPositions).Get(streamKey(path))
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("start of the stream of %s: %w", path, ErrCorrupt)
		}
		since, ok = time.Unix(0, int64(binary.BigEndian.Uint64(v))), true
		return nil
	})
	return since, ok, err
}

// SetStreamSince stores where the stream of a followed path starts, in a
// transaction of its own: the tailer does so before it reads a line of
// the file that starts it, so that whatever is counted of the stream, a
// restart knows where the stream starts.
func (s *Store) SetStreamSince(path string, since time.Time) error {
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPositions).Put(streamKey(path), u64(uint64(since.UnixNano())))
	})
}

// allocSize is the step in which the file grows.
const allocSize = 1 << 20

// initialMmap is how much of the address space the file is mapped into at
// open, beyond its end, so that a commit that grows the file does not map
// it again: bbolt doubles its mapping as the file grows, and each time
// copies out every key and value that the commit under way has reached
// (node.dereference). A replay's commit of a hundred sites' minutes reaches
// tens of megabytes, copied at each of a dozen doublings: 16% of its CPU
// and most of its garbage. Pages of the mapping that the file does not fill
// cost no memory; past 1 GiB, bbolt grows the mapping by 1 GiB at a time.
// On a 32-bit machine, whose address space is scarce, bbolt's default.
const initialMmap = strconv.IntSize / 64 << 30

// Space is how the database file's room is used.
type Space struct {
	File  int64 // the data's high-water mark: pages written so far
	InUse int64 // pages holding data, the rest being free for reuse
}

// Space reports how the file's room is used.
func (s *Store) Space() (Space, error) {
	var sp Space
	err := s.view(func(tx *bolt.Tx) error {
		sp.File = tx.Size()
		return nil
	})
	st := s.db.Stats()
	sp.InUse = sp.File - int64(st.FreePageN+st.PendingPageN)*int64(s.db.Info().PageSize)
	return sp, err
}
