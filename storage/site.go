package storage

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Site reads one site's counts: the buckets under sites/<name> and the
// site's path log in memory. A Site is only handed out once its buckets are
// committed, and stays valid until the store closes. Its reads are bbolt
// read transactions, which never wait for a commit.
type Site struct {
	name string
	st   *Store
	db   *bolt.DB
	loc  *time.Location
	cfg  *Config // the store's
	key  []byte  // the site's bucket name
	log  *pathLog

	// The rest is the writer's, used under Store.writeMu.
	numbers numbering     // the path numbers of the site's last batch (see numbering)
	written writes        // the minutes commits wrote of late (see recentWrite)
	kept    logtally.Kept // lines committed to each resolution since Open
	// setsFrom is the key of the oldest minute that may hold its visitor
	// set, nil for the first: compaction looks for sets from there (see
	// compactSets), not through every stored minute.
	setsFrom []byte
}

// newSite returns the state of a site whose path log is not loaded yet.
func (s *Store) newSite(name string) *Site {
	l := newPathLog()
	l.wake = s.wake
	return &Site{name: name, st: s, db: s.db, loc: s.loc, cfg: &s.cfg, key: []byte(name), log: l}
}

// Name returns the site's name.
func (s *Site) Name() string { return s.name }

// bucket returns one of the site's buckets.
func (s *Site) bucket(tx *bolt.Tx, name []byte) *bolt.Bucket {
	return tx.Bucket(bucketSites).Bucket(s.key).Bucket(name)
}

// siteSet is the store's sites by name. A site is added, by its writer,
// once the transaction that created its buckets has committed; Open adds
// the file's before the store is used.
type siteSet struct {
	mu sync.RWMutex
	m  map[string]*Site
	// shares holds the sites that share another's history, and whose
	// (see share.go).
	shares map[string]string
}

// Site returns the site called name, and false when the store holds none.
func (s *Store) Site(name string) (*Site, bool) {
	s.sites.mu.RLock()
	defer s.sites.mu.RUnlock()
	si, ok := s.sites.m[name]
	return si, ok
}

// Sites returns the names of the stored sites, sorted.
func (s *Store) Sites() []string {
	s.sites.mu.RLock()
	defer s.sites.mu.RUnlock()
	names := make([]string, 0, len(s.sites.m))
	for name := range s.sites.m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// siteList returns the stored sites, sorted by name.
func (s *Store) siteList() []*Site {
	s.sites.mu.RLock()
	defer s.sites.mu.RUnlock()
	out := make([]*Site, 0, len(s.sites.m))
	for _, si := range s.sites.m {
		out = append(out, si)
	}
	slices.SortFunc(out, func(a, b *Site) int { return cmp.Compare(a.name, b.name) })
	return out
}

// addSite makes a site whose buckets have committed visible to readers.
// The caller holds writeMu.
func (s *Store) addSite(si *Site) {
	s.sites.mu.Lock()
	s.sites.m[si.name] = si
	s.sites.mu.Unlock()
}

// AddSites creates, in one transaction, the sites of names that the store
// does not hold yet, empty. The daemon adds each declared named counter's
// site at start, so that a counter that has matched nothing yet, or not
// been committed yet, has a history (of zeros) to answer from, and so that
// the file lists every counter it was asked to count (see report).
func (s *Store) AddSites(names ...string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var fresh []*Site
	for _, name := range names {
		if !logtally.ValidSite(name) {
			return fmt.Errorf("add site %q: not a site name", name)
		}
		if _, ok := s.Site(name); !ok && !slices.ContainsFunc(fresh, func(si *Site) bool { return si.name == name }) {
			fresh = append(fresh, s.newSite(name))
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	err := s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		for _, si := range fresh {
			if err := createSite(tx, si.name); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("add sites: %w", err)
	}
	for _, si := range fresh {
		s.addSite(si)
	}
	return nil
}

// CopySite copies every bucket of site from into a new site to, in one
// transaction, and reports whether it did: not when to exists already or
// from does not. The daemon copies logtally.DefaultSite into
// logtally.AllSites when a file a single-site version wrote is first opened
// to count several sites, so that the all-sites view keeps its history. The
// outbox, which only lives under the default site, is not copied.
func (s *Store) CopySite(from, to string) (copied bool, err error) {
	if !logtally.ValidSite(to) {
		return false, fmt.Errorf("copy site %s to %q: not a site name", from, to)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	src, ok := s.Site(from)
	if !ok {
		return false, nil
	}
	if _, ok := s.Site(to); ok {
		return false, nil
	}
	err = s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		sites := tx.Bucket(bucketSites)
		dst, err := sites.CreateBucket([]byte(to))
		if err != nil {
			return nil, err
		}
		return nil, copyBucket(dst, sites.Bucket(src.key), true)
	})
	if err != nil {
		return false, fmt.Errorf("copy site %s to %s: %w", from, to, err)
	}
	si := s.newSite(to)
	if err := s.view(func(tx *bolt.Tx) error { return si.log.load(tx, si.bucket(tx, bucketPathLog)) }); err != nil {
		return false, fmt.Errorf("copy site %s to %s: %w", from, to, err)
	}
	s.addSite(si)
	return true, nil
}

// copyBucket copies every key, value and nested bucket of src into dst,
// with their sequences: the path log's keys are numbered by its sequence.
// top leaves out the outbox, which is the store's, not the site's.
func copyBucket(dst, src *bolt.Bucket, top bool) error {
	if err := dst.SetSequence(src.Sequence()); err != nil {
		return err
	}
	return src.ForEach(func(k, v []byte) error {
		if v != nil {
			// Valid for the whole transaction: bbolt moves what a
			// node refers to off its mapping before remapping it.
			return dst.Put(k, v)
		}
		if top && string(k) == string(bucketOutbox) {
			return nil
		}
		nested, err := dst.CreateBucket(k)
		if err != nil {
			return err
		}
		return copyBucket(nested, src.Bucket(k), false)
	})
}

// The read methods of Store read logtally.DefaultSite.

// Minutes is Site.Minutes of logtally.DefaultSite.
func (s *Store) Minutes(from, to time.Time) ([]logtally.Bucket, error) {
	return s.def.Minutes(from, to)
}

// Last is Site.Last of logtally.DefaultSite.
func (s *Store) Last() (time.Time, bool, error) { return s.def.Last() }

// Series is Site.Series of logtally.DefaultSite.
func (s *Store) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	return s.def.Series(from, to, step)
}

// PathCounts is Site.PathCounts of logtally.DefaultSite.
func (s *Store) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	return s.def.PathCounts(paths, day)
}

// WindowSeconds is Site.WindowSeconds of logtally.DefaultSite.
func (s *Store) WindowSeconds(from, to int64) ([]logtally.Second, error) {
	return s.def.WindowSeconds(from, to)
}

// MinuteVisitors is Site.MinuteVisitors of logtally.DefaultSite.
func (s *Store) MinuteVisitors(minute time.Time) ([]uint64, bool, error) {
	return s.def.MinuteVisitors(minute)
}

// Pages is Site.Pages of logtally.DefaultSite.
func (s *Store) Pages(from, to time.Time, limit int) (logtally.PageRange, error) {
	return s.def.Pages(from, to, limit)
}

// Totals is Site.Totals of logtally.DefaultSite.
func (s *Store) Totals(from, to time.Time) (logtally.Counts, error) { return s.def.Totals(from, to) }

// Newest is Site.Newest of logtally.DefaultSite.
func (s *Store) Newest() (time.Time, bool, error) { return s.def.Newest() }

// KeptFrom is Site.KeptFrom of logtally.DefaultSite.
func (s *Store) KeptFrom(step time.Duration) (time.Time, bool, error) { return s.def.KeptFrom(step) }

// Location returns the zone that the store's days follow.
func (s *Store) Location() *time.Location { return s.loc }
