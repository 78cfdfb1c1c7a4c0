package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// Commit writes everything the batches hold in one transaction: minute,
// hour and day deltas, per-path counts (to the path log) and the live
// window's seconds, each into its batch's site (created if new), the file
// positions of all of them, and with Config.Outbox each batch itself,
// numbered, for the fleet. On error nothing of any batch is stored and the
// batches are left as they were, so that they can be committed again. So
// the counts of every site and the read positions that follow them are
// never apart, which is what makes counting exactly-once. Each site has at
// most one of the batches.
//
// A minute, hour or day older than its retention, counted back from the
// newest line stored in the site (this batch's included), is not written:
// its lines count in the coarser resolutions that keep them.
func (s *Store) Commit(bs ...*tally.Batch) error {
	commit, err := s.Prepare(bs...)
	if err != nil {
		return err
	}
	return commit()
}

// Prepare does what committing bs needs nothing stored for, on several
// cores (see prepareMinutes), and returns the rest of the commit, its
// transaction: so several commits can be prepared at once while another
// one writes. The batches are the commit's until it returns (Prepare sorts
// their visitors in place). The commits of one source of lines are still
// written in the order of their lines, one after the other; to try a
// failed one again, prepare it again.
func (s *Store) Prepare(bs ...*tally.Batch) (commit func() error, err error) {
	now := s.now()
	bs = withAlso(bs)
	entries := make([][]byte, len(bs))
	for i, b := range bs {
		if !logtally.ValidSite(b.Site()) {
			return nil, fmt.Errorf("commit: site %q: not a site name", b.Site())
		}
		for _, prev := range bs[:i] {
			if prev.Site() == b.Site() {
				return nil, fmt.Errorf("commit: two batches of site %s", b.Site())
			}
		}
		var err error
		if entries[i], err = s.outbox.entry(b, now); err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
	}
	preps := s.prepare(bs)
	return func() error {
		defer s.release(preps)
		return s.commitPrepared(bs, entries, preps)
	}, nil
}

// withAlso returns bs with, after each batch, a view of it for each other
// site whose lines it holds (tally.Batch.Also): named counters that count
// the same lines are counted once, prepared once (see prepare), and
// written under each name.
func withAlso(bs []*tally.Batch) []*tally.Batch {
	n := len(bs)
	for _, b := range bs {
		n += len(b.Also())
	}
	if n == len(bs) {
		return bs
	}
	out := make([]*tally.Batch, 0, n)
	for _, b := range bs {
		out = append(out, b)
		for _, site := range b.Also() {
			out = append(out, b.As(site))
		}
	}
	return out
}

// batchCommit is a commit's batches on their way into the file, with what
// the commit knows of them.
type batchCommit struct {
	bs      []*tally.Batch
	entries [][]byte // their outbox entries (nil: none)
	preps   []prepared
	sites   []*Site
	fresh   []bool          // the sites this commit creates
	kept    []logtally.Kept // the lines each batch kept in each resolution
	shares  shareChange     // which sites share a history (see share_commit.go)
}

// commitPrepared is Commit once its batches' outbox entries are encoded
// and their minutes prepared: what it does serially, in one transaction.
// The preparing, on several cores and with nothing stored to read, holds
// no lock.
func (s *Store) commitPrepared(bs []*tally.Batch, entries [][]byte, preps []prepared) error {
	now := s.now()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	c := &batchCommit{bs: bs, entries: entries, preps: preps, sites: make([]*Site, len(bs)),
		fresh: make([]bool, len(bs)), kept: make([]logtally.Kept, len(bs))}
	for i, b := range bs {
		si, ok := s.Site(b.Site())
		if !ok {
			si, c.fresh[i] = s.newSite(b.Site()), true
		}
		c.sites[i] = si
	}
	defer func() { // c.sites, as the commit left them (see unshareTx)
		for _, si := range c.sites {
			si.numbers.reset()
		}
	}()
	defer s.scratch.reset() // after an error, counts may be left in the tallies
	if err := s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) { return s.writeCommit(tx, c) }); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	s.committed(c, now)
	return nil
}

// writeCommit writes what c's batches hold in tx: each into its site, then
// the file positions they end at and their outbox entries. It returns the
// changes to the sites' path logs.
func (s *Store) writeCommit(tx *bolt.Tx, c *batchCommit) ([]siteChange, error) {
	changes := make([]siteChange, 0, len(c.bs))
	for i, b := range c.bs {
		if c.fresh[i] {
			if err := createSite(tx, b.Site()); err != nil {
				return nil, err
			}
		}
	}
	if err := s.settleShares(tx, c); err != nil {
		return nil, err
	}
	for i, b := range c.bs {
		if c.shares.skip[i] {
			continue // stored once, in the site it shares (see share.go)
		}
		ch, k, err := c.sites[i].commit(tx, b, &c.preps[i])
		if err != nil {
			return nil, fmt.Errorf("site %s: %w", b.Site(), err)
		}
		c.kept[i] = k
		changes = append(changes, siteChange{c.sites[i].log, ch})
	}
	pb := tx.Bucket(bucketPositions)
	for _, b := range c.bs {
		for file, off := range b.Positions() {
			if err := pb.Put([]byte(file), u64(uint64(off))); err != nil {
				return nil, err
			}
		}
	}
	for _, entry := range c.entries {
		if entry != nil {
			if err := s.outbox.put(tx, entry); err != nil {
				return nil, err
			}
		}
	}
	return changes, nil
}

// committed brings the writer's state in step with c, committed at now:
// the sites it created, the outbox, the compactions it asks for, the
// minutes it wrote and the lines it kept.
func (s *Store) committed(c *batchCommit, now time.Time) {
	s.sharesCommitted(c)
	for i, b := range c.bs {
		si := c.sites[i]
		if c.fresh[i] {
			s.addSite(si)
		}
		s.outbox.added(c.entries[i])
		if si.log.wantsCompaction() {
			si.log.askCompaction()
		}
		si.written.add(now, b.Minutes())
		k := c.kept[i]
		si.kept.Minutes, si.kept.Hours, si.kept.Days = si.kept.Minutes+k.Minutes, si.kept.Hours+k.Hours, si.kept.Days+k.Days
	}
}

// commit writes what a batch of the site holds but its positions and its
// outbox entry, in tx, with its minutes prepared as p; it returns the
// change to the site's path log and the lines it kept in each resolution.
// The caller holds writeMu.
func (s *Site) commit(tx *bolt.Tx, b *tally.Batch, p *prepared) (*logChange, logtally.Kept, error) {
	var kept logtally.Kept
	sc := &s.st.scratch
	sc.pages.grow(len(b.Paths()))
	sc.day.grow(len(b.Paths()))
	var dayPaths []dayDelta

	deltas := make([]*tally.Delta, len(p.minutes))
	minutes := make([]int64, len(p.minutes))
	for i, m := range p.minutes {
		minutes[i], deltas[i] = m.minute, m.d
	}
	f, err := s.advanceFloors(tx, minutes, deltas)
	if err != nil {
		return nil, kept, err
	}
	stored := s.lastMinuteKey(tx)
	for i := range p.minutes {
		m := &p.minutes[i]
		for _, pd := range m.ids {
			sc.day.add(pd.id, pd.n)
		}
		if len(sc.day.touched) > 0 && (i == len(p.minutes)-1 || p.minutes[i+1].day != m.day) {
			dayPaths = append(dayPaths, dayDelta{uint32Key([]byte(m.day)), sc.day.takeIDs(make([]pathDelta, 0, len(sc.day.touched)))})
		}
		if m.minute < f.minute {
			continue // its rollups are kept, the minute itself has expired
		}
		if err := s.commitMinute(tx, m, b.Paths(), stored); err != nil {
			return nil, kept, err
		}
		kept.Minutes += m.d.Requests
	}
	hb := s.bucket(tx, bucketHours)
	hb.FillPercent = 1 // appended in order, as minutes
	days := minuteDays(p.minutes)
	lazyFrom, err := s.endLazyDays(tx, days, f)
	if err != nil {
		return nil, kept, err
	}
	for _, hour := range slices.Sorted(maps.Keys(p.hours)) {
		if hour < f.hour {
			continue
		}
		if err := mergeRollup(hb, u64(uint64(hour)), p.hours[hour]); err != nil {
			return nil, kept, fmt.Errorf("hour %d: %w", hour, err)
		}
		kept.Hours += p.hours[hour].Requests
	}
	n, err := s.commitDays(tx, p, days, f, lazyFrom)
	if err != nil {
		return nil, kept, err
	}
	kept.Days += n
	if err := s.commitSeconds(tx, b); err != nil {
		return nil, kept, err
	}
	ch, err := s.logPaths(tx, b, dayPaths, f.dayPaths)
	return ch, kept, err
}

// secondPairs returns each path's distinct visitors in a second's delta,
// sorted: its page views' paths and visitors, index by index.
func secondPairs(d *tally.Delta, names []string) map[string][]uint64 {
	if len(d.Views) == 0 || len(d.Views) != len(d.Visitors) {
		return nil
	}
	pairs := make(map[string][]uint64)
	for i, id := range d.Views {
		p := names[id]
		pairs[p] = append(pairs[p], d.Visitors[i])
	}
	for p, vs := range pairs {
		slices.Sort(vs)
		pairs[p] = slices.Compact(vs)
	}
	return pairs
}

// advanceFloors moves the newest line stored to the newest of a batch's
// minutes with a request, and returns the retention floors that follow.
func (s *Site) advanceFloors(tx *bolt.Tx, minutes []int64, deltas []*tally.Delta) (floors, error) {
	for i := len(minutes) - 1; i >= 0; i-- {
		if deltas[i].Requests > 0 {
			if err := s.advance(tx, minutes[i]); err != nil {
				return floors{}, err
			}
			break
		}
	}
	return s.floors(tx), nil
}

// Kept returns how many lines the commits since Open counted in minutes,
// hours and days: the all-sites view's, which counts each line once, or
// with no such view the sum over the sites (named counters' left out).
func (s *Store) Kept() logtally.Kept {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var kept logtally.Kept
	for _, si := range s.siteList() {
		if si.name == logtally.AllSites {
			return si.kept
		}
	}
	for _, si := range s.siteList() {
		if logtally.IsDimensionSite(si.name) {
			continue // a counter's or breakdown's: its lines are counted in their own site too
		}
		kept.Minutes, kept.Hours, kept.Days = kept.Minutes+si.kept.Minutes, kept.Hours+si.kept.Hours, kept.Days+si.kept.Days
	}
	return kept
}

// denseFrom is the number of visitors from which a minute's, an hour's or
// a day's sketch is kept dense: past it the dense form (16 KiB stored) is
// no larger than the sparse one, and inserting into the sparse form
// re-sorts it every few hundred hashes.
const denseFrom = 2048

// lastMinuteKey returns the last key of a minute that the site stores, nil
// for none: a commit looks for nothing stored of the minutes after it
// (most of a replay's), which saves a lookup each.
func (s *Site) lastMinuteKey(tx *bolt.Tx) []byte {
	k, _ := s.bucket(tx, bucketMinutes).Cursor().Last()
	return bytes.Clone(k)
}

// commitMinute merges a prepared minute into the stored one, or stores
// what prepare encoded for it when there is none (most of a replay's); one
// after the last key stored (see lastMinuteKey) is not looked for.
func (s *Site) commitMinute(tx *bolt.Tx, m *minutePrep, names []string, last []byte) error {
	sc := &s.st.scratch
	mb := s.bucket(tx, bucketMinutes)
	key := u64(uint64(m.minute))
	// Minutes are mostly appended in order: half full pages (bbolt's
	// default) would be half their room, and pages filled to 90% a tenth.
	mb.FillPercent = 1
	var stored []byte
	if bytes.Compare(key, last) <= 0 {
		stored = mb.Get(key)
	}
	if stored == nil {
		if len(m.d.Visitors) > 0 {
			s.setsFrom = lowerKey(s.setsFrom, key)
		}
		return mb.Put(key, m.rec)
	}
	var r record
	if stored != nil {
		// The set, if any, aliases the stored value, which stays valid
		// until the transaction ends.
		field, err := r.decodeFields(stored, true)
		if err == nil && r.set == nil {
			err = r.readSketch(field)
		}
		if err != nil {
			return fmt.Errorf("minute %d: %w", m.minute, err)
		}
	}
	for _, pd := range m.ids {
		sc.pages.add(pd.id, pd.n)
	}
	sc.top = sc.pages.take(names, sc.top[:0])
	if err := mergeMinute(&r, m, sc.top, s.cfg.TopPages, &sc.sketch); err != nil {
		return fmt.Errorf("minute %d: %w", m.minute, err)
	}
	if r.set != nil {
		s.setsFrom = lowerKey(s.setsFrom, key)
	}
	v, err := r.encode()
	if err != nil {
		return err
	}
	return mb.Put(key, v)
}

// mergeMinute merges a prepared minute, whose page views per path are top,
// into its record r, keeping topPages pages. The minute's visitor count
// stays exact while it keeps its visitor set (r.set), which the delta's
// visitors are merged into, or while it has none; once the set has been
// compacted into a sketch, new visitors can only go into the sketch, made
// for the delta with buf, and the count becomes the sketch's estimate.
func mergeMinute(r *record, m *minutePrep, top []logtally.PageCount, topPages int, buf *sketchBuf) error {
	d := m.d
	r.add(d)
	if n := len(d.Visitors); n > 0 {
		if !r.Approximate && (r.set != nil || r.Visitors == 0) {
			// As addSketch would have made the sketch dense.
			r.denseSet = r.denseSet || r.Visitors+int64(n) >= denseFrom
			set, count, err := mergeHashes(r.set, d.Visitors)
			if err != nil {
				return err
			}
			r.set, r.Visitors = set, int64(count)
		} else {
			addSketch(r, r.Visitors, n, m.sketch(buf))
			r.Approximate = true
			r.Visitors = int64(r.hll.Estimate())
		}
	}
	r.mergeTop(top, topPages)
	return nil
}

func getUvarint(b []byte) uint64 {
	v, _ := binary.Uvarint(b)
	return v
}

// commitSeconds stores the live window's per-second state and drops the
// seconds that have left the window.
func (s *Site) commitSeconds(tx *bolt.Tx, b *tally.Batch) error {
	sb := s.bucket(tx, bucketSeconds)
	sc := &s.st.scratch
	counter := logtally.IsDimensionSite(s.name) // keeps its pairs: see second.Pairs
	for sec, d := range b.Seconds() {
		if sec < b.WindowStart() {
			continue
		}
		var pairs map[string][]uint64
		var visitors []uint64
		if counter {
			// The pairs of path and visitor are the delta's, index by
			// index: they are read before anything sorts, and its visitors
			// are sorted in a copy, so that a commit tried again reads
			// them the same.
			pairs = secondPairs(d, b.Paths())
			visitors = slices.Clone(d.Visitors)
			sortHashes(visitors, sc)
			visitors = slices.Compact(visitors)
		} else {
			// In place, d.Visitors shortened with them: Compact zeroes what
			// it leaves behind, which a commit tried again would read.
			prepare(d, sc)
			visitors = d.Visitors
		}
		for _, id := range d.Views {
			sc.pages.add(id, 1)
		}
		sc.top = sc.pages.take(b.Paths(), sc.top[:0])
		key := u64(uint64(sec))
		var v []byte
		if old := sb.Get(key); old != nil {
			var o second
			if err := o.decode(old); err != nil {
				return fmt.Errorf("second %d: %w", sec, err)
			}
			o.merge(d, visitors, sc.top, pairs)
			v = o.encode(&sc.values)
		} else {
			v = encodeSecond(&sc.values, d.Requests, d.PageViews, visitors, sc.top, pairs)
		}
		if err := sb.Put(key, v); err != nil {
			return err
		}
	}
	return dropSeconds(sb, b.WindowStart())
}

// dropSeconds deletes the seconds before start, which have left the live
// window (none if start is not after 0).
func dropSeconds(sb *bolt.Bucket, start int64) error {
	if start <= 0 {
		return nil
	}
	var stale [][]byte
	c := sb.Cursor()
	end := u64(uint64(start))
	for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0; k, _ = c.Next() {
		stale = append(stale, bytes.Clone(k))
	}
	for _, k := range stale {
		if err := sb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
