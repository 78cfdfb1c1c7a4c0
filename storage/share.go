package storage

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Named counters that count the same lines under the same keys (the same
// method, pattern and status, see counter.Matcher.Same) are counted once,
// and stored once: the later one's site holds no counts, only the name of
// the site whose history is its own too (keyShares in its counters
// bucket). A commit writes nothing into such a site, though its batch
// goes to the fleet's outbox under its own name; a reader asks Shares
// which site to read. When the counter counts apart again, Unshare gives
// its site a copy of the history it shared, and it is written to from then
// on.

// keyShares is in a site's counters bucket: the name of the site whose
// history the site reads as its own.
var keyShares = []byte("shares")

// loadShares reads which sites share another's history. It is called
// once, at open.
func (s *Store) loadShares(tx *bolt.Tx) {
	s.sites.shares = make(map[string]string)
	for name, si := range s.sites.m {
		if b := si.bucket(tx, bucketCounters); b != nil {
			if v := b.Get(keyShares); v != nil {
				s.sites.shares[name] = string(v)
			}
		}
	}
}

// Shares returns the site whose history site reads: site itself, or the
// one it shares (see ShareSites).
func (s *Store) Shares(site string) string {
	s.sites.mu.RLock()
	defer s.sites.mu.RUnlock()
	if as, ok := s.sites.shares[site]; ok {
		return as
	}
	return site
}

// Share is a site that is to read the history of site As (see ShareSites).
type Share struct{ Site, As string }

// ShareSites makes each share's site read the history of its As, and
// commits write nothing into it, when the site holds no history of its
// own (it is new, or shares one already), in one transaction; it returns
// the sites that share a history now. A site with a history of its own is
// left as it is: its batches are written into it, as they were.
func (s *Store) ShareSites(shares ...Share) (shared []string, err error) {
	if len(shares) == 0 {
		return nil, nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var fresh []*Site
	err = s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		fresh, shared = fresh[:0], shared[:0]
		for _, sh := range shares {
			si, held := s.Site(sh.Site)
			if !held {
				if err := createSite(tx, sh.Site); err != nil {
					return nil, err
				}
				fresh = append(fresh, s.newSite(sh.Site))
			} else if s.Shares(sh.Site) == sh.Site && hasHistory(si, tx) {
				continue
			}
			counters := tx.Bucket(bucketSites).Bucket([]byte(sh.Site)).Bucket(bucketCounters)
			if err := counters.Put(keyShares, []byte(sh.As)); err != nil {
				return nil, err
			}
			shared = append(shared, sh.Site)
		}
		return nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("share sites: %w", err)
	}
	for _, si := range fresh {
		s.addSite(si)
	}
	s.sites.mu.Lock()
	for _, sh := range shares {
		if slices.Contains(shared, sh.Site) {
			s.sites.shares[sh.Site] = sh.As
		}
	}
	s.sites.mu.Unlock()
	return shared, nil
}

// hasHistory reports whether a site holds a minute, hour or day.
func hasHistory(si *Site, tx *bolt.Tx) bool {
	for _, b := range [][]byte{bucketMinutes, bucketHours, bucketDays} {
		if k, _ := si.bucket(tx, b).Cursor().First(); k != nil {
			return true
		}
	}
	return false
}

// Unshare gives site, if it shares another's history (see ShareSites), a
// copy of that history, in one transaction, from which on commits write
// into it.
func (s *Store) Unshare(site string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	as := s.Shares(site)
	if as == site {
		return nil
	}
	src, ok := s.Site(as)
	if !ok {
		return fmt.Errorf("unshare site %s: the site it shares, %s, is not in the file", site, as)
	}
	err := s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		sites := tx.Bucket(bucketSites)
		if err := sites.DeleteBucket([]byte(site)); err != nil {
			return nil, err
		}
		dst, err := sites.CreateBucket([]byte(site))
		if err != nil {
			return nil, err
		}
		return nil, copyBucket(dst, sites.Bucket(src.key), true)
	})
	if err != nil {
		return fmt.Errorf("unshare site %s: %w", site, err)
	}
	si := s.newSite(site)
	if err := s.view(func(tx *bolt.Tx) error { return si.log.load(tx, si.bucket(tx, bucketPathLog)) }); err != nil {
		return fmt.Errorf("unshare site %s: %w", site, err)
	}
	s.addSite(si)
	s.sites.mu.Lock()
	delete(s.sites.shares, site)
	s.sites.mu.Unlock()
	return nil
}
