package storage

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Per-path counts are kept in shards: the paths of one day (or of all time)
// are split by a hash of the path into pathShards sorted lists, one bbolt
// value each. A compaction of the path log that touches a hundred thousand
// paths then rewrites at most pathShards values by a merge join, instead of
// seeking to a hundred thousand keys twice.
//
// All-time totals are not written on every compaction. A day's counts are
// folded into the all-time shards once the day is over (Prune does it); a
// path's total is its all-time count plus its counts on the days not yet
// folded, plus what the path log holds for it.
const pathShards = 256

// byPath orders page counts by path.
func byPath(a, b logtally.PageCount) int { return cmp.Compare(a.Path, b.Path) }

// shardOf is FNV-1a of the path, modulo pathShards.
func shardOf(path string) uint16 {
	h := uint32(2166136261)
	for i := 0; i < len(path); i++ {
		h ^= uint32(path[i])
		h *= 16777619
	}
	return uint16(h % pathShards)
}

// A shard is a path list (see codec.go) sorted by path.

func decodeShard(b []byte) ([]logtally.PageCount, error) {
	if b == nil {
		return nil, nil
	}
	d := decoder{b: b}
	out := d.pageCounts()
	if d.err != nil || len(d.b) != 0 {
		return nil, fmt.Errorf("path shard: %w", ErrCorrupt)
	}
	return out, nil
}

// mergeShard adds delta (sorted by path) into the shard stored at key. A
// path new to the shard is admitted while *distinct < limit (which it
// increments); past the limit its count is returned as overflow for the
// caller to add to logtally.OtherPath. The stored entries are merged as bytes, never
// decoded into strings: a shard holds hundreds of paths and a commit
// rewrites every shard it touches.
func mergeShard(b *bolt.Bucket, key []byte, delta []logtally.PageCount, distinct *uint64, limit int) (overflow int64, err error) {
	m := shardMerge{old: decoder{b: b.Get(key)}}
	if len(m.old.b) > 0 {
		m.left = m.old.uvarint()
	}
	size := len(m.old.b) + len(delta)*48 + 2*binary.MaxVarintLen64
	m.body = make([]byte, 0, size)
	overflow = m.merge(delta, distinct, limit)
	if m.old.err != nil || m.left != 0 {
		return 0, fmt.Errorf("path shard: %w", ErrCorrupt)
	}
	out := binary.AppendUvarint(make([]byte, 0, size), m.entries)
	return overflow, b.Put(key, append(out, m.body...))
}

// shardMerge is the merge join of a stored shard's entries with a delta.
type shardMerge struct {
	old     decoder // the stored entries not read yet
	left    uint64  // how many
	path    []byte  // the stored entry read last
	count   int64
	body    []byte // the merged entries
	entries uint64 // how many
}

// merge merges delta into the stored entries, admitting a path new to the
// shard while *distinct < limit (which it increments), and returns the
// page views of those it did not admit.
func (m *shardMerge) merge(delta []logtally.PageCount, distinct *uint64, limit int) (overflow int64) {
	have := m.next()
	j := 0
	for have || j < len(delta) {
		var c int
		switch {
		case !have:
			c = 1
		case j == len(delta):
			c = -1
		default:
			c = strings.Compare(string(m.path), delta[j].Path)
		}
		switch {
		case c < 0:
			m.put(m.path, m.count)
			have = m.next()
		case c > 0:
			d := delta[j]
			if d.Path != logtally.OtherPath && *distinct >= uint64(limit) {
				overflow += d.PageViews
			} else {
				if d.Path != logtally.OtherPath {
					*distinct++
				}
				m.put([]byte(d.Path), d.PageViews)
			}
			j++
		default:
			m.put(m.path, m.count+delta[j].PageViews)
			have = m.next()
			j++
		}
	}
	return overflow
}

// next reads the next stored entry, and reports whether there was one.
func (m *shardMerge) next() bool {
	if m.left == 0 {
		return false
	}
	m.left--
	m.path, m.count = m.old.entry()
	return m.old.err == nil
}

// put appends an entry to the merged shard.
func (m *shardMerge) put(path []byte, count int64) {
	m.body = appendEntry(m.body, path, count)
	m.entries++
}

// addPaths adds page views per path to the shards under prefix, at most
// limit distinct paths, the rest counted as logtally.OtherPath, which it returns.
func addPaths(b, counters *bolt.Bucket, prefix []byte, counts map[string]int64, limit int) (int64, error) {
	shards := make([][]logtally.PageCount, pathShards)
	for p, n := range counts {
		s := shardOf(p)
		shards[s] = append(shards[s], logtally.PageCount{Path: p, PageViews: n})
	}
	for _, delta := range shards {
		slices.SortFunc(delta, byPath)
	}
	return mergeShards(b, counters, prefix, shards, limit)
}

// mergeShards merges each shard's delta (sorted by path, distinct) into the
// shards under prefix, at most limit distinct paths, the rest counted as
// logtally.OtherPath, which it returns.
func mergeShards(b, counters *bolt.Bucket, prefix []byte, shards [][]logtally.PageCount, limit int) (int64, error) {
	counterKey := pathCounterKey(prefix)
	distinct := getUvarint(counters.Get(counterKey))
	before := distinct
	var other int64
	for s, delta := range shards {
		if len(delta) == 0 {
			continue
		}
		over, err := mergeShard(b, shardKey(prefix, uint16(s)), delta, &distinct, limit)
		if err != nil {
			return 0, err
		}
		other += over
	}
	if other > 0 {
		if _, err := mergeShard(b, shardKey(prefix, shardOf(logtally.OtherPath)), []logtally.PageCount{{Path: logtally.OtherPath, PageViews: other}}, &distinct, limit); err != nil {
			return 0, err
		}
	}
	if distinct != before {
		return other, counters.Put(counterKey, binary.AppendUvarint(nil, distinct))
	}
	return other, nil
}

// fold is the finished days of one site to fold into its all-time path
// totals, in order, none folded already.
type fold struct {
	si   *Site
	days [][]byte
}

// foldDays adds the sites' finished days' path counts to their all-time
// totals and records each site's last as folded, in shared transactions
// of up to maxFoldDays days, each site in one at most once. A site's path
// log is compacted first, in the same transaction: once a day is folded,
// its later page views reach the all-time totals only through compaction,
// and the log holds none from before. Not a transaction a site (a replay
// ends with every site's) nor a day: each costs a commit's two syncs.
func (s *Store) foldDays(folds []fold, fails failures) {
	for len(folds) > 0 {
		var group []fold
		budget := maxFoldDays
		for len(folds) > 0 && budget > 0 {
			f := folds[0]
			if fails.failed(f.si) {
				folds = folds[1:]
				continue
			}
			n := min(len(f.days), budget)
			group = append(group, fold{f.si, f.days[:n]})
			budget -= n
			if folds[0].days = f.days[n:]; len(folds[0].days) == 0 {
				folds = folds[1:]
			} else {
				break // the rest of its days in a transaction of their own
			}
		}
		if len(group) == 0 {
			continue
		}
		if err := s.foldTx(group); err != nil {
			eachAlone(fails, group, func(f fold) *Site { return f.si }, func(f fold) error { return s.foldTx([]fold{f}) })
		}
	}
}

// foldTx folds each site's days in group in one transaction. Its error
// does not say which site failed: with several, see eachAlone.
func (s *Store) foldTx(group []fold) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		changes := make([]siteChange, 0, len(group))
		for _, f := range group {
			ch, err := f.si.compactTx(tx, nil)
			if err != nil {
				return nil, err
			}
			changes = append(changes, siteChange{f.si.log, ch})
			for _, day := range f.si.daysUpTo(tx, f.days) {
				if err := f.si.foldDay(tx, day); err != nil {
					return nil, err
				}
			}
		}
		return changes, nil
	})
}

// daysUpTo returns days, found by daysToFold before tx, with every day
// not folded yet that the per-day page counts hold in tx before the last
// of them, in order. A commit between them may have logged a late line
// into a day before days that had none (and compactTx merged it into the
// per-day page counts, not the all-time totals): once a later day is
// folded, no pass would fold it.
func (s *Site) daysUpTo(tx *bolt.Tx, days [][]byte) [][]byte {
	last := days[len(days)-1]
	all := slices.Clone(days)
	c := s.bucket(tx, bucketDayPaths).Cursor()
	k, _ := c.Seek(nextDayKey(s.bucket(tx, bucketCounters).Get(keyFolded)))
	for ; k != nil && bytes.Compare(k[:4], last) < 0; k, _ = c.Seek(nextDayKey(k)) {
		all = append(all, bytes.Clone(k[:4]))
	}
	slices.SortFunc(all, bytes.Compare)
	return slices.CompactFunc(all, bytes.Equal)
}

// foldDay adds one finished day's path counts to the all-time totals in
// tx, and records it as folded, unless it is folded already.
func (s *Site) foldDay(tx *bolt.Tx, day []byte) error {
	counters := s.bucket(tx, bucketCounters)
	if f := counters.Get(keyFolded); f != nil && bytes.Compare(day, f) <= 0 {
		return nil
	}
	counts := make(map[string]int64)
	c := s.bucket(tx, bucketDayPaths).Cursor()
	for k, v := c.Seek(day); k != nil && bytes.HasPrefix(k, day); k, v = c.Next() {
		entries, err := decodeShard(v)
		if err != nil {
			return err
		}
		for _, e := range entries {
			counts[e.Path] += e.PageViews
		}
	}
	if _, err := addPaths(s.bucket(tx, bucketPaths), counters, allTimePrefix, counts, s.cfg.MaxPaths); err != nil {
		return err
	}
	return counters.Put(keyFolded, bytes.Clone(day))
}

// maxFoldDays is the most days one transaction folds: a long history
// replayed at once is folded a month at a time.
const maxFoldDays = 31

// daysToFold returns every day before today that is not folded yet,
// stored in the shards or still in the path log, in order.
func (s *Site) daysToFold(today []byte) ([][]byte, error) {
	var days [][]byte
	err := s.st.view(func(tx *bolt.Tx) error {
		folded := s.bucket(tx, bucketCounters).Get(keyFolded)
		seen := make(map[string]bool)
		for _, name := range [][]byte{bucketDayPaths, bucketPathLog} {
			c := s.bucket(tx, name).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Seek(nextDayKey(k)) {
				day := k[:4]
				if bytes.Compare(day, today) >= 0 {
					break
				}
				if (folded == nil || bytes.Compare(day, folded) > 0) && !seen[string(day)] {
					seen[string(day)] = true
					days = append(days, bytes.Clone(day))
				}
			}
		}
		return nil
	})
	slices.SortFunc(days, bytes.Compare)
	return days, err
}

// lookupShard returns a path's count in the shard under prefix.
func lookupShard(b *bolt.Bucket, prefix []byte, path string) (int64, error) {
	entries, err := decodeShard(b.Get(shardKey(prefix, shardOf(path))))
	if err != nil {
		return 0, err
	}
	i, ok := slices.BinarySearchFunc(entries, path, func(e logtally.PageCount, p string) int { return cmp.Compare(e.Path, p) })
	if !ok {
		return 0, nil
	}
	return entries[i].PageViews, nil
}
