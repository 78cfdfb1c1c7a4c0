package storage

import (
	"fmt"
	"maps"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Named counters declared apart may still count the same lines: the same
// pattern, other method lists, and a log that never has the methods that
// set them apart. ingest then hands them to a commit as one batch and its
// views (tally.Batch.As), as it does counters that count the same by
// declaration. Such counters are stored once for as long as they count
// alike, the way shares.go stores those declared the same: each commit
// settles, in its own transaction and before it writes anything
// (settleShares),
//
//   - which shares end: a site that shares another's history, and is not
//     given the same batch as that one in this commit (one of them counts
//     a line the other does not), is given a copy of the history it shared
//     first, and written into from then on;
//   - which shares begin: of the sites given the same batch, those that
//     hold no history yet share the first of them that holds none either.
//     Two empty histories are alike, and stay alike while every commit
//     gives them the same batch.
//
// So a counter reads exactly what it counted, whoever stores it.

// shareChange is what a commit changes of which sites share a history,
// applied to the store's state once it has committed.
type shareChange struct {
	skip     []bool            // c.bs[i] is stored in the site its site shares
	unshared []*Site           // sites given a copy of the history they shared, replacing theirs
	shared   map[string]string // sites that share a history from this commit on, and whose
}

// settleShares settles c's shares in tx (see above). c's fresh sites are
// created already.
func (s *Store) settleShares(tx *bolt.Tx, c *batchCommit) error {
	sc := &c.shares
	sc.skip = make([]bool, len(c.bs))
	fam := make([]int, len(c.bs)) // the first batch of c.bs[i]'s family: itself and its views
	famOf := make(map[string]int, len(c.bs))
	for i, b := range c.bs {
		if fam[i] = i; i > 0 && b.Same(c.bs[i-1]) {
			fam[i] = fam[i-1]
		}
		famOf[b.Site()] = fam[i]
	}
	s.sites.mu.RLock()
	shares := maps.Clone(s.sites.shares)
	s.sites.mu.RUnlock()
	for site, as := range shares {
		fs, sIn := famOf[site]
		fa, aIn := famOf[as]
		if sIn == aIn && (!sIn || fs == fa) {
			continue // still alike
		}
		if err := s.unshareTx(tx, c, site, as); err != nil {
			return fmt.Errorf("site %s: %w", site, err)
		}
		delete(shares, site)
	}
	for i, b := range c.bs {
		_, sc.skip[i] = shares[b.Site()]
	}
	for i := range c.bs {
		if fam[i] == i && i+1 < len(c.bs) && fam[i+1] == i {
			if err := s.shareFamily(tx, c, i, fam); err != nil {
				return err
			}
		}
	}
	return nil
}

// shareFamily makes the sites of the family of batches that starts at
// c.bs[first] that hold no history share the first of them that holds
// none either.
func (s *Store) shareFamily(tx *bolt.Tx, c *batchCommit, first int, fam []int) error {
	sc := &c.shares
	lead := -1
	for i := first; i < len(c.bs) && fam[i] == first; i++ {
		if sc.skip[i] || !logtally.IsCounterSite(c.bs[i].Site()) || hasHistory(c.sites[i], tx) {
			continue
		}
		if lead < 0 {
			lead = i
			continue
		}
		site, as := c.bs[i].Site(), c.bs[lead].Site()
		if err := c.sites[i].bucket(tx, bucketCounters).Put(keyShares, []byte(as)); err != nil {
			return fmt.Errorf("site %s: %w", site, err)
		}
		if sc.shared == nil {
			sc.shared = make(map[string]string)
		}
		sc.shared[site] = as
		sc.skip[i] = true
	}
	return nil
}

// unshareTx gives site a copy of the history of as, which it shared, in
// tx, and puts a site loaded from it in c's place of site's.
func (s *Store) unshareTx(tx *bolt.Tx, c *batchCommit, site, as string) error {
	sites := tx.Bucket(bucketSites)
	src := sites.Bucket([]byte(as))
	if src == nil {
		return fmt.Errorf("the site it shares, %s, is not in the file", as)
	}
	if err := sites.DeleteBucket([]byte(site)); err != nil {
		return err
	}
	dst, err := sites.CreateBucket([]byte(site))
	if err != nil {
		return err
	}
	if err := copyBucket(dst, src, true); err != nil {
		return err
	}
	si := s.newSite(site)
	if err := si.log.load(tx, si.bucket(tx, bucketPathLog)); err != nil {
		return err
	}
	c.shares.unshared = append(c.shares.unshared, si)
	for i, b := range c.bs {
		if b.Site() == site {
			c.sites[i] = si
		}
	}
	return nil
}

// sharesCommitted brings the store's sites and shares in step with what
// c changed of them, once committed.
func (s *Store) sharesCommitted(c *batchCommit) {
	sc := &c.shares
	for _, si := range sc.unshared {
		s.addSite(si)
	}
	if len(sc.unshared) == 0 && len(sc.shared) == 0 {
		return
	}
	s.sites.mu.Lock()
	for _, si := range sc.unshared {
		delete(s.sites.shares, si.name)
	}
	maps.Copy(s.sites.shares, sc.shared)
	s.sites.mu.Unlock()
}
