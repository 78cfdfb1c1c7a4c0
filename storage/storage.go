// Package storage persists per-minute counts and each log file's read
// position in one embedded bbolt file.
//
// The idea that makes it crash-safe: the counts a batch of lines produced and
// the file offsets just after those lines are written in the same bbolt
// transaction. The access log itself is the durable queue; after any crash,
// reading resumes at the last committed offset and nothing is lost or counted
// twice.
package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout version this code reads and writes.
const SchemaVersion = 1

// DefaultSite is the site all data belongs to until several sites are served.
const DefaultSite = "default"

// Bucket layout:
//
//	meta/schema           -> uint64 SchemaVersion
//	meta/salt             -> uint64 visitor-hash salt, chosen at creation
//	positions/<file id>   -> uint64 byte offset after the last committed line
//	sites/<site>/minutes/<unix minute> -> encoded Minute
var (
	bucketMeta      = []byte("meta")
	bucketPositions = []byte("positions")
	bucketSites     = []byte("sites")
	bucketMinutes   = []byte("minutes")

	keySchema = []byte("schema")
	keySalt   = []byte("salt")
)

var (
	// ErrSchema means the file was written by an incompatible version of
	// logtally. The file is left untouched.
	ErrSchema = errors.New("unsupported database schema")
	// ErrCorrupt means a stored value cannot be decoded.
	ErrCorrupt = errors.New("corrupt database value")
)

// Config configures the store.
type Config struct {
	Path string // database file
}

// RegisterFlags registers the store's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Path, "db", "logtally.db", "database `file` (created if missing)")
}

// Store is an open database. It is safe for concurrent use: bbolt allows one
// writer and many readers at once.
type Store struct {
	db   *bolt.DB
	site []byte
	salt uint64
}

// Open opens or creates the database at path.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{db: db, site: []byte(DefaultSite)}
	if err := db.Update(s.init); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

// init checks the schema of an existing file, or lays out a new one.
func (s *Store) init(tx *bolt.Tx) error {
	if meta := tx.Bucket(bucketMeta); meta != nil {
		v := meta.Get(keySchema)
		if len(v) != 8 || binary.BigEndian.Uint64(v) != SchemaVersion {
			return fmt.Errorf("%w: found %x, want %d", ErrSchema, v, SchemaVersion)
		}
		salt := meta.Get(keySalt)
		if len(salt) != 8 {
			return fmt.Errorf("salt: %w", ErrCorrupt)
		}
		s.salt = binary.BigEndian.Uint64(salt)
		return nil
	}
	if tx.Bucket(bucketPositions) != nil || tx.Bucket(bucketSites) != nil {
		return fmt.Errorf("%w: data without a schema version", ErrSchema)
	}
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	var salt [8]byte
	rand.Read(salt[:])
	s.salt = binary.BigEndian.Uint64(salt[:])
	if err := meta.Put(keySchema, u64(SchemaVersion)); err != nil {
		return err
	}
	if err := meta.Put(keySalt, salt[:]); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketPositions); err != nil {
		return err
	}
	sites, err := tx.CreateBucket(bucketSites)
	if err != nil {
		return err
	}
	site, err := sites.CreateBucket(s.site)
	if err != nil {
		return err
	}
	_, err = site.CreateBucket(bucketMinutes)
	return err
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Salt returns the visitor-hash salt chosen when the database was created.
func (s *Store) Salt() uint64 { return s.salt }

func (s *Store) minutes(tx *bolt.Tx) *bolt.Bucket {
	return tx.Bucket(bucketSites).Bucket(s.site).Bucket(bucketMinutes)
}

// Commit writes a batch's minute deltas and file positions in one
// transaction. On error nothing of the batch is stored, and the batch is left
// as it was so that it can be committed again.
func (s *Store) Commit(b *Batch) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		mb := s.minutes(tx)
		for minute, d := range b.minutes {
			key := u64(uint64(minute))
			var m minuteValue
			if v := mb.Get(key); v != nil {
				if err := m.decode(v); err != nil {
					return fmt.Errorf("minute %d: %w", minute, err)
				}
			}
			m.merge(d)
			if err := mb.Put(key, m.encode()); err != nil {
				return err
			}
		}
		pb := tx.Bucket(bucketPositions)
		for file, off := range b.positions {
			if err := pb.Put([]byte(file), u64(uint64(off))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Position returns the committed read offset of a file, and whether there is
// one.
func (s *Store) Position(file string) (offset int64, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
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

// Minute is the stored counts of one UTC minute.
type Minute struct {
	Time      time.Time // start of the minute, UTC
	Requests  int64
	PageViews int64
	Visitors  int64 // distinct visitors with a page view in this minute
}

// Minutes returns the stored minutes in [from, to], oldest first.
func (s *Store) Minutes(from, to time.Time) ([]Minute, error) {
	var out []Minute
	err := s.scan(from, to, func(t time.Time, m *minuteValue) {
		out = append(out, Minute{Time: t, Requests: m.requests, PageViews: m.pageviews,
			Visitors: int64(len(m.visitors))})
	})
	return out, err
}

// Detail is a stored minute with the visitor hashes and per-path page views
// behind its counts, enough to rebuild a live window from.
type Detail struct {
	Minute
	VisitorHashes []uint64         // distinct, sorted
	Paths         map[string]int64 // page views per path
}

// Details returns the stored minutes in [from, to] in full, oldest first.
func (s *Store) Details(from, to time.Time) ([]Detail, error) {
	var out []Detail
	err := s.scan(from, to, func(t time.Time, m *minuteValue) {
		out = append(out, Detail{
			Minute:        Minute{Time: t, Requests: m.requests, PageViews: m.pageviews, Visitors: int64(len(m.visitors))},
			VisitorHashes: m.visitors,
			Paths:         m.paths,
		})
	})
	return out, err
}

// Last returns the start of the newest stored minute, and whether there is one.
func (s *Store) Last() (t time.Time, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		k, _ := s.minutes(tx).Cursor().Last()
		if k != nil {
			t, ok = time.Unix(int64(binary.BigEndian.Uint64(k))*60, 0).UTC(), true
		}
		return nil
	})
	return t, ok, err
}

// scan decodes the minutes in [from, to] in key order. Decoded values are
// copies, valid after the transaction.
func (s *Store) scan(from, to time.Time, fn func(time.Time, *minuteValue)) error {
	lo, hi := u64(uint64(from.Unix()/60)), u64(uint64(to.Unix()/60))
	return s.db.View(func(tx *bolt.Tx) error {
		c := s.minutes(tx).Cursor()
		for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) <= 0; k, v = c.Next() {
			var m minuteValue
			if err := m.decode(v); err != nil {
				return fmt.Errorf("minute %x: %w", k, err)
			}
			fn(time.Unix(int64(binary.BigEndian.Uint64(k))*60, 0).UTC(), &m)
		}
		return nil
	})
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}
