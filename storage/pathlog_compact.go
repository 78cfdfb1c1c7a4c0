package storage

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Compaction runs when the log passes about the size of the shards (from
// compactMinBytes to compactSoftBytes) or compactSoftPaths
// (Commit wakes RunPruner), on every Prune, before a day is folded, and in
// the commit's own transaction when the log passes a hard bound because no
// compaction kept up, or when late lines may reach the all-time cap.
const (
	compactMinBytes  = 1 << 20
	compactSoftBytes = 8 << 20
	compactHardBytes = 16 << 20
	// The log holds at most compactHardPaths (day, path) counts and as many
	// paths in its dictionary (about 100 bytes each), plus one commit's: a
	// commit that would pass either compacts.
	compactSoftPaths = 1 << 17
	compactHardPaths = 1 << 18
	// maxPendingDays is how many days the log may hold: each costs an
	// array of 8 bytes per path in the dictionary.
	maxPendingDays = 4
)

// wantsCompaction reports whether the log has grown past its soft bounds.
// The bound in bytes follows the size of the shards a compaction rewrites,
// between compactMinBytes and compactSoftBytes: each compaction then
// rewrites about as many bytes as the log it merges (its cost per logged
// byte stays the same), and the log, which takes room in the file until it
// is merged, stays about as large as the shards, not a fixed 8 MiB that a
// small site's day would never amortise. The caller is the writer.
func (l *pathLog) wantsCompaction() bool {
	return l.bytes >= l.compactAt || l.paths >= compactSoftPaths
}

// askCompaction wakes RunPruner for a compaction, unless it is asked
// already.
func (l *pathLog) askCompaction() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// compactTx merges the path log into the shards and deletes it: each day's
// page views into its shards if the day is within the hour retention, and
// into the all-time totals if the day is folded into them already. The sum
// merged is the log's counts, plus extra: the change of the commit running
// it, which the counts do not hold yet.
func (s *Site) compactTx(tx *bolt.Tx, extra *logChange) (*logChange, error) {
	counters := s.bucket(tx, bucketCounters)
	c := compaction{cfg: s.cfg, counters: counters, dayPaths: s.bucket(tx, bucketDayPaths),
		paths: s.bucket(tx, bucketPaths), folded: uint32Key(counters.Get(keyFolded)),
		floor: s.floors(tx).dayPaths, ch: &logChange{compacted: true}}
	l := s.log
	l.dict.sortOrder()
	shards := make([][]logtally.PageCount, pathShards)
	for _, day := range l.pendingDays(extra) {
		if day < c.floor && day > c.folded {
			continue // expired and not folded: nowhere to go
		}
		l.dayShards(day, extra, shards)
		if err := c.mergeDay(day, shards); err != nil {
			return nil, err
		}
	}
	return c.ch, clearBucket(s.bucket(tx, bucketPathLog))
}

// compaction is what compactTx merges a day's page views into.
type compaction struct {
	cfg                       *Config
	counters, dayPaths, paths *bolt.Bucket
	// folded is the last day folded into the all-time totals, floor the
	// first whose per-day page counts are kept.
	folded, floor uint32
	ch            *logChange // the compaction's change to the log
}

// pendingDays returns the days that the log and extra hold, in order.
func (l *pathLog) pendingDays(extra *logChange) []uint32 {
	var days []uint32
	for d := range l.days {
		days = append(days, d)
	}
	if extra != nil {
		for _, d := range extra.days {
			days = append(days, d.day)
		}
	}
	slices.Sort(days)
	return slices.Compact(days)
}

// dayShards fills shards with the day's page views that the log and extra
// hold, by shard, each sorted by path with a path once. The caller has
// sorted the dictionary (sortOrder).
func (l *pathLog) dayShards(day uint32, extra *logChange, shards [][]logtally.PageCount) {
	for i := range shards {
		shards[i] = shards[i][:0]
	}
	if pd := l.days[day]; pd != nil {
		for _, i := range l.dict.order { // sorted already
			if n := pd.get(i); n != 0 {
				sh := l.dict.shard[i]
				shards[sh] = append(shards[sh], logtally.PageCount{Path: l.dict.names[i], PageViews: n})
			}
		}
	}
	if extra == nil {
		return
	}
	var touched [pathShards]bool
	for _, d := range extra.days {
		if d.day == day {
			for _, pc := range d.paths {
				sh := shardOf(pc.Path)
				shards[sh] = append(shards[sh], pc)
				touched[sh] = true
			}
		}
	}
	for i, sh := range shards {
		if touched[i] {
			shards[i] = sumSorted(sh)
		}
	}
}

// mergeDay merges a day's page views, by shard, into the day's shards if
// its page counts are kept, and into the all-time totals if it is folded.
func (c *compaction) mergeDay(day uint32, shards [][]logtally.PageCount) error {
	if day >= c.floor {
		prefix := dayBytes(day)
		over, err := mergeShards(c.dayPaths, c.counters, prefix, shards, c.cfg.MaxDayPaths)
		if err != nil {
			return err
		}
		if over > 0 {
			c.ch.overflow = append(c.ch.overflow, day)
		}
		cur := c.dayPaths.Cursor()
		for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
			c.ch.shardBytes += int64(len(v))
		}
	}
	if day <= c.folded {
		if _, err := mergeShards(c.paths, c.counters, allTimePrefix, shards, c.cfg.MaxPaths); err != nil {
			return err
		}
	}
	return nil
}

// clearBucket deletes every key of b: collected first, as a cursor must
// not see its bucket change.
func clearBucket(b *bolt.Bucket) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// sumSorted sorts a shard's delta by path and adds up repeated paths.
func sumSorted(delta []logtally.PageCount) []logtally.PageCount {
	if len(delta) < 2 {
		return delta
	}
	slices.SortFunc(delta, byPath)
	out := delta[:1]
	for _, e := range delta[1:] {
		if last := &out[len(out)-1]; last.Path == e.Path {
			last.PageViews += e.PageViews
		} else {
			out = append(out, e)
		}
	}
	return out
}

// compact merges every site's path log into its per-path shards (see
// compactLogs). RunPruner compacts the logs that a commit found grown
// (compactWanted).
func (s *Store) compact(ctx context.Context) error {
	return s.compactLogs(ctx, s.siteList())
}

// Sites whose logs are compacted together share a transaction while their
// logs hold at most maxGroupLogBytes in all, and at most maxGroupLogs of
// them: a pruner passes over each site's log every minute, and a
// transaction a site would cost a thousand sites two thousand syncs.
const (
	maxGroupLogBytes = compactHardBytes
	maxGroupLogs     = 256
)

// compactLogs merges the path logs of sites into their per-path shards,
// the sites in shared transactions (each site once in each). There is
// nothing to do for a site whose log is empty, so it is idempotent.
func (s *Store) compactLogs(ctx context.Context, sites []*Site) error {
	fails := failures{}
	if err := s.compactLogsOf(ctx, sites, fails); err != nil {
		return err
	}
	return fails.err(sites)
}

// compactLogsOf is compactLogs, with the sites that fail recorded in
// fails, the others compacted all the same.
func (s *Store) compactLogsOf(ctx context.Context, sites []*Site, fails failures) error {
	for len(sites) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, group, err := s.compactGroup(sites, fails)
		if err != nil {
			eachAlone(fails, group, func(si *Site) *Site { return si }, func(si *Site) error {
				_, _, err := s.compactGroup([]*Site{si}, fails)
				return err
			})
		}
		sites = sites[n:]
	}
	return nil
}

// compactGroup compacts, in one transaction under writeMu, the logs of the
// first of sites that fit in a group (but those that failed), and returns
// how many of sites it went through and the group.
func (s *Store) compactGroup(sites []*Site, fails failures) (int, []*Site, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var group []*Site
	n, size := 0, int64(0)
	for _, si := range sites {
		if len(group) > 0 && (len(group) == maxGroupLogs || size+si.log.bytes > maxGroupLogBytes) {
			break
		}
		n++
		if len(si.log.days) > 0 && !fails.failed(si) {
			group = append(group, si)
			size += si.log.bytes
		}
	}
	if len(group) == 0 {
		return n, nil, nil
	}
	err := s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		changes := make([]siteChange, 0, len(group))
		for _, si := range group {
			ch, err := si.compactTx(tx, nil)
			if err != nil {
				return nil, fmt.Errorf("compact: %w", err)
			}
			changes = append(changes, siteChange{si.log, ch})
		}
		return changes, nil
	})
	return n, group, err
}

// compactWanted compacts the path logs that have grown past their soft
// bounds.
func (s *Store) compactWanted(ctx context.Context) error {
	var wanted []*Site
	s.writeMu.Lock()
	for _, si := range s.siteList() {
		if si.log.wantsCompaction() {
			wanted = append(wanted, si)
		}
	}
	s.writeMu.Unlock()
	return s.compactLogs(ctx, wanted)
}
