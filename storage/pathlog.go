package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// The path log. Merging a commit's page views per path into the day's
// shards rewrites every shard a busy day has (by mid-day, all of its paths)
// on every commit. Instead, a commit appends the batch's page views per path
// and day to the log, in the same transaction as everything else, and the
// log is compacted into the shards later, in a transaction that also
// deletes the log values it merged: whenever a crash comes, the file holds
// either a log value or its effect on the shards, never both or neither.
//
// Until it is compacted, the log is also held in memory, summed per day and
// path (pending), so that PathCounts adds it to the shards without reading
// it, and compaction merges that sum without decoding the log again. Open
// rebuilds it from the log, and every transaction that changes the log
// changes pending to match once it has committed.
//
// A log value is capped already: the commit decides, as the shards would,
// which new paths a day admits and which count as logtally.OtherPath (Store.admit).
// So compaction changes no answer, and a pending count is final.
//
// Compaction runs when the log passes about the size of the shards (from
// compactMinBytes to compactSoftBytes) or compactSoftPaths
// (Commit wakes RunPruner), on every Prune, before a day is folded, and in
// the commit's own transaction when the log passes a hard bound because no
// compaction kept up, or when late lines may reach the all-time cap.
const (
	logValueSize     = 16 << 10 // a commit's log for a day is cut in values of about this size
	compactMinBytes  = 1 << 20
	compactSoftBytes = 8 << 20
	compactHardBytes = 16 << 20
	// Pending holds at most compactHardPaths (day, path) counts and as many
	// paths in its dictionary (about 100 bytes each), plus one commit's: a
	// commit that would pass either compacts.
	compactSoftPaths = 1 << 17
	compactHardPaths = 1 << 18
	// maxPendingDays is how many days the log may hold: each costs an
	// array of 8 bytes per path in pending's dictionary.
	maxPendingDays = 4
	// maxDaySets is how many days' admission sets are kept between commits.
	maxDaySets = 2
)

// logEncoding is the version byte of a log value.
const logEncoding = 1

// otherID is the path number that stands for logtally.OtherPath in a pathDelta.
const otherID = -1

// pathDelta is a path's page views in a batch: the path is the batch's path
// number (Batch.names), or otherID.
type pathDelta struct {
	id int32
	n  int64
}

// dayDelta is a batch's page views per path on one day.
type dayDelta struct {
	day   uint32
	paths []pathDelta
}

// pathName returns the path a pathDelta of b counts.
func pathName(b *logtally.Batch, id int32) string {
	if id == otherID {
		return logtally.OtherPath
	}
	return b.Paths()[id]
}

// pending is the uncompacted path log summed per day and path. It numbers
// paths in a dictionary of its own, kept across compactions (up to
// compactSoftPaths), so that a day's counts are an array; Store.xlat maps a
// batch's path numbers to these, so that a commit looks a path up once per
// batch numbering rather than once per commit.
//
// It is read under Store.pathMu and changed under Store.pathMu and
// Store.writeMu.
type pending struct {
	slot  map[string]int32
	names []string
	shard []uint8 // shardOf(names[i])
	// order lists path numbers by shard, then path: compaction merges a
	// day's paths shard by shard in that order, and sorting a busy day's
	// paths again for every compaction would cost more than the merge.
	// Numbers from len(order) on are not in it yet (sortOrder).
	order []int32
	gen   uint64 // changes when the dictionary is emptied
	days  map[uint32]*pendingDay
	paths int   // nonzero counts over all days
	bytes int64 // size of the log values
}

// pendingDay holds one day's pending page views by path number.
type pendingDay struct {
	views []int64
	paths int // nonzero counts
}

func newPending() *pending {
	return &pending{slot: make(map[string]int32), days: make(map[uint32]*pendingDay)}
}

// lookup returns a path's number, or -1.
func (p *pending) lookup(path string) int32 {
	if i, ok := p.slot[path]; ok {
		return i
	}
	return -1
}

// insert numbers a new path.
func (p *pending) insert(path string) int32 {
	i := int32(len(p.names))
	p.slot[path] = i
	p.names = append(p.names, path)
	p.shard = append(p.shard, uint8(shardOf(path)))
	return i
}

// add adds page views to a day's count of path number i.
func (p *pending) add(day uint32, i int32, n int64) {
	pd := p.days[day]
	if pd == nil {
		pd = &pendingDay{}
		p.days[day] = pd
	}
	if int(i) >= len(pd.views) {
		pd.views = append(pd.views, make([]int64, int(i)+1-len(pd.views))...)
	}
	if pd.views[i] == 0 {
		pd.paths++
		p.paths++
	}
	pd.views[i] += n
}

// sortOrder brings the paths numbered since the last call into order.
func (p *pending) sortOrder() {
	if len(p.order) == len(p.names) {
		return
	}
	byShardPath := func(a, b int32) int {
		if c := cmp.Compare(p.shard[a], p.shard[b]); c != 0 {
			return c
		}
		return cmp.Compare(p.names[a], p.names[b])
	}
	fresh := make([]int32, 0, len(p.names)-len(p.order))
	for i := len(p.order); i < len(p.names); i++ {
		fresh = append(fresh, int32(i))
	}
	slices.SortFunc(fresh, byShardPath)
	merged := make([]int32, 0, len(p.names))
	i, j := 0, 0
	for i < len(p.order) && j < len(fresh) {
		if byShardPath(p.order[i], fresh[j]) < 0 {
			merged = append(merged, p.order[i])
			i++
		} else {
			merged = append(merged, fresh[j])
			j++
		}
	}
	merged = append(merged, p.order[i:]...)
	p.order = append(merged, fresh[j:]...)
}

// get returns the pending page views of path number i on the day.
func (pd *pendingDay) get(i int32) int64 {
	if pd == nil || i < 0 || int(i) >= len(pd.views) {
		return 0
	}
	return pd.views[i]
}

// has reports whether path number i has pending page views on the day.
func (pd *pendingDay) has(i int32) bool { return pd.get(i) != 0 }

// reset empties pending after a compaction, keeping the dictionary unless it
// has grown past compactSoftPaths: a site with more paths than that is
// better served by numbering them again than by holding paths no longer
// pending.
func (p *pending) reset() {
	clear(p.days)
	p.paths, p.bytes = 0, 0
	if len(p.names) > compactSoftPaths {
		clear(p.slot)
		clear(p.names)
		p.names, p.shard, p.order = p.names[:0], p.shard[:0], p.order[:0]
		p.gen++
	}
}

// daySet is the set of paths a day has admitted (stored in its shards or
// pending), as hashes: it says whether a path is new to the day without
// reading the shards. It is only built for a day that may reach its cap.
//
// The hashes are 64-bit, with a seed chosen at Open: two paths of a day
// share a hash with odds of about n^2 in 2^65 (n paths: 1 in 3*10^9 at the
// default cap), and then the second one is admitted without being counted;
// compaction, which counts paths in the shards themselves, then counts it
// as logtally.OtherPath if the day is full.
type daySet struct {
	hashes map[uint64]struct{}
	used   uint64 // Store.uses when last used, for eviction
	// known marks, by number in pending's dictionary (of generation gen),
	// the paths found admitted already: once admitted a path stays so, and
	// a busy day's commits mostly bring paths it holds.
	known []uint64
	gen   uint64
}

// knows reports whether path number i is marked admitted.
func (set *daySet) knows(i int32, gen uint64) bool {
	return set.gen == gen && i >= 0 && int(i)/64 < len(set.known) && set.known[i/64]&(1<<(i%64)) != 0
}

// mark marks path number i admitted.
func (set *daySet) mark(i int32, gen uint64) {
	if i < 0 {
		return
	}
	if set.gen != gen {
		set.known, set.gen = set.known[:0], gen
	}
	for int(i)/64 >= len(set.known) {
		set.known = append(set.known, 0)
	}
	set.known[i/64] |= 1 << (i % 64)
}

// logChange is what a transaction did to the log, applied to pending and to
// the admission sets once the transaction has committed.
type logChange struct {
	b         *logtally.Batch
	days      []resolvedDay
	bytes     int64
	compacted bool // the whole log was compacted: pending restarts empty
	// shardBytes is the size of the shards a compaction merged into.
	shardBytes int64
	overflow   []uint32 // days whose shards counted more paths than their admission set
	newHashes  map[uint32][]uint64
}

// resolvedDay is a day's page views as logged: after admission, with the
// number of each path in pending's dictionary, or -1 if it has none yet.
type resolvedDay struct {
	day   uint32
	paths []pathDelta
	slots []int32
}

// logKey is a log value's key: the day, then a sequence number.
func logKey(day uint32, seq uint64) []byte {
	k := binary.BigEndian.AppendUint32(make([]byte, 0, 12), day)
	return binary.BigEndian.AppendUint64(k, seq)
}

// appendLog appends a day's page views per path to the log, cut in values
// of about logValueSize: version, then a path list (codec.go). It returns
// the bytes written.
func appendLog(lb *bolt.Bucket, a *arena, day uint32, b *logtally.Batch, paths []pathDelta) (int64, error) {
	lb.FillPercent = 1 // appended in key order
	var total int64
	for len(paths) > 0 {
		size, n := 1+binary.MaxVarintLen64, 0
		for n < len(paths) && (n == 0 || size < logValueSize) {
			size += entrySize(pathName(b, paths[n].id), paths[n].n)
			n++
		}
		v := binary.AppendUvarint(append(a.alloc(size), logEncoding), uint64(n))
		for _, pc := range paths[:n] {
			v = appendEntry(v, pathName(b, pc.id), pc.n)
		}
		seq, err := lb.NextSequence()
		if err != nil {
			return 0, err
		}
		if err := lb.Put(logKey(day, seq), v); err != nil {
			return 0, err
		}
		total += int64(len(v))
		paths = paths[n:]
	}
	return total, nil
}

// decodeLog calls fn for each path of a log value. path is only valid
// during the call.
func decodeLog(v []byte, fn func(path []byte, n int64)) error {
	if len(v) == 0 || v[0] != logEncoding {
		return fmt.Errorf("path log version: %w", ErrCorrupt)
	}
	d := decoder{b: v[1:]}
	d.pathList(fn)
	if d.err != nil || len(d.b) != 0 {
		return fmt.Errorf("path log: %w", ErrCorrupt)
	}
	return nil
}

// loadPending rebuilds pending from the log.
func (s *Store) loadPending(tx *bolt.Tx) error {
	p := newPending()
	c := s.bucket(tx, bucketPathLog).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 12 {
			return fmt.Errorf("path log key %x: %w", k, ErrCorrupt)
		}
		day := binary.BigEndian.Uint32(k)
		err := decodeLog(v, func(path []byte, n int64) {
			i := p.lookup(string(path))
			if i < 0 {
				i = p.insert(string(path))
			}
			p.add(day, i, n)
		})
		if err != nil {
			return fmt.Errorf("path log %x: %w", k, err)
		}
		p.bytes += int64(len(v))
	}
	s.pending = p
	return nil
}

// writeTx runs fn in a write transaction. The caller holds writeMu. If the
// transaction commits, the change fn returns is applied under pathMu, taken
// before the commit so that no reader sees the file and pending out of step.
func (s *Store) writeTx(fn func(tx *bolt.Tx) (*logChange, error)) error {
	tx, err := s.db.Begin(true)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after fn failed or panicked; a no-op once committed
	ch, err := fn(tx)
	if err != nil {
		return err
	}
	s.pathMu.Lock()
	defer s.pathMu.Unlock()
	if err := tx.Commit(); err != nil {
		return err
	}
	if ch != nil {
		s.applyChange(ch)
	}
	return nil
}

// applyChange brings pending and the admission sets in step with a
// committed change. The caller holds writeMu and pathMu.
func (s *Store) applyChange(ch *logChange) {
	if ch.compacted {
		s.pending.reset()
		s.compactAt = min(max(ch.shardBytes, compactMinBytes), compactSoftBytes)
	} else {
		for _, d := range ch.days {
			set := s.sets[d.day]
			for i, pc := range d.paths {
				sl := d.slots[i]
				if sl < 0 {
					name := pathName(ch.b, pc.id)
					// An earlier day of the change may have numbered it.
					if sl = s.pending.lookup(name); sl < 0 {
						sl = s.pending.insert(name)
					}
					if pc.id != otherID {
						s.xlat[pc.id] = sl
					}
				}
				s.pending.add(d.day, sl, pc.n)
				if set != nil && pc.id != otherID {
					set.mark(sl, s.pending.gen) // the day admitted it
				}
			}
		}
		s.pending.bytes += ch.bytes
	}
	for day, hs := range ch.newHashes {
		if set := s.sets[day]; set != nil {
			for _, h := range hs {
				set.hashes[h] = struct{}{}
			}
		}
	}
	for _, day := range ch.overflow {
		delete(s.sets, day)
	}
}

// translate readies s.xlat for the numbering of b: xlat[id] is the number
// in pending's dictionary of b's path id, or -1 if not looked up yet or not
// there.
func (s *Store) translate(b *logtally.Batch) {
	if s.xlatEpoch != b.Numbering() || s.xlatGen != s.pending.gen {
		s.xlat = s.xlat[:0]
		s.xlatEpoch, s.xlatGen = b.Numbering(), s.pending.gen
	}
	for len(s.xlat) < len(b.Paths()) {
		s.xlat = append(s.xlat, -1)
	}
}

// slotOf returns the number in pending's dictionary of a batch's path, or -1.
func (s *Store) slotOf(b *logtally.Batch, id int32) int32 {
	if id == otherID {
		return s.pending.lookup(logtally.OtherPath)
	}
	sl := s.xlat[id]
	if sl < 0 {
		sl = s.pending.lookup(b.Paths()[id])
		s.xlat[id] = sl
	}
	return sl
}

// uint32Key reads a day key.
func uint32Key(k []byte) uint32 {
	if len(k) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(k)
}

// logPaths appends a commit's page views per path and day (in day order) to
// the log, deciding which new paths each day admits. It compacts the whole
// log in the same transaction when the log is past a hard bound, or when
// late lines (of days already folded into the all-time totals, which only
// compaction adds them to) may reach the all-time cap: pending counts are
// final only while nothing is capped at compaction.
func (s *Store) logPaths(tx *bolt.Tx, b *logtally.Batch, days []dayDelta, now time.Time) (*logChange, error) {
	counters := s.bucket(tx, bucketCounters)
	lb := s.bucket(tx, bucketPathLog)
	folded := uint32Key(counters.Get(keyFolded))
	floor := uint32Key(dayKey(now.Add(-s.cfg.HourRetention), s.loc))
	s.translate(b)
	s.uses++
	ch := &logChange{b: b}
	newCounts, newNames, lateCounts := 0, 0, 0
	newDays := 0
	for _, d := range days {
		dayPart, late := d.day >= floor, d.day <= folded
		if !dayPart && !late {
			continue // expired and never folded: as before, not counted
		}
		pd := s.pending.days[d.day]
		if pd == nil {
			newDays++
		}
		paths := d.paths
		slots := make([]int32, len(paths))
		fresh := 0
		for i, pc := range paths {
			slots[i] = s.slotOf(b, pc.id)
			if !pd.has(slots[i]) && pathName(b, pc.id) != logtally.OtherPath {
				fresh++
			}
		}
		if dayPart {
			var err error
			if paths, slots, err = s.admit(tx, counters, b, d.day, pd, paths, slots, fresh, ch); err != nil {
				return nil, err
			}
		}
		for _, sl := range slots {
			if !pd.has(sl) {
				newCounts++
			}
			if sl < 0 {
				newNames++
			}
		}
		if late {
			lateCounts += len(paths)
		}
		n, err := appendLog(lb, &s.scratch.values, d.day, b, paths)
		if err != nil {
			return nil, err
		}
		ch.bytes += n
		ch.days = append(ch.days, resolvedDay{d.day, paths, slots})
	}
	inline := s.pending.bytes+ch.bytes > compactHardBytes || s.pending.paths+newCounts > compactHardPaths ||
		len(s.pending.names)+newNames > compactHardPaths || len(s.pending.days)+newDays > maxPendingDays
	if lateCounts > 0 && !inline {
		// Every late path may be new to the all-time totals.
		distinct := int(getUvarint(counters.Get(pathCounterKey(allTimePrefix))))
		for day, pd := range s.pending.days {
			if day <= folded {
				distinct += pd.paths
			}
		}
		inline = distinct+lateCounts > s.cfg.MaxPaths
	}
	if inline {
		c, err := s.compactTx(tx, now, ch)
		if err != nil {
			return nil, err
		}
		c.newHashes = ch.newHashes
		return c, nil
	}
	return ch, nil
}

// admit decides which of a day's paths the day admits, as its shards would:
// every path it holds already, and new paths while it has fewer than
// MaxDayPaths; the others are counted as logtally.OtherPath. pd is the day's pending
// counts, slots the paths' numbers in pending, and fresh how many paths are
// not pending on the day yet. While the day's stored distinct paths, its
// pending ones and the fresh ones stay within the cap, every path is
// admitted without looking further; past that, the day's admission set
// tells new paths from known ones.
func (s *Store) admit(tx *bolt.Tx, counters *bolt.Bucket, b *logtally.Batch, day uint32, pd *pendingDay,
	paths []pathDelta, slots []int32, fresh int, ch *logChange) ([]pathDelta, []int32, error) {
	limit := s.cfg.MaxDayPaths
	prefix := binary.BigEndian.AppendUint32(nil, day)
	set := s.sets[day]
	if set == nil {
		stored := int(getUvarint(counters.Get(pathCounterKey(prefix))))
		known := 0
		if pd != nil {
			known = pd.paths
		}
		if stored+known+fresh <= limit {
			return paths, slots, nil
		}
		var err error
		if set, err = s.loadSet(tx, prefix, pd); err != nil {
			return nil, nil, err
		}
		s.sets[day] = set
	}
	set.used = s.uses
	out := make([]pathDelta, 0, len(paths))
	outSlots := make([]int32, 0, len(paths))
	var other int64
	admitted := len(set.hashes)
	var added []uint64
	for i, pc := range paths {
		name := pathName(b, pc.id)
		if name == logtally.OtherPath {
			other += pc.n
			continue
		}
		if sl := slots[i]; !pd.has(sl) && !set.knows(sl, s.pending.gen) {
			h := maphash.String(s.seed, name)
			if _, ok := set.hashes[h]; ok {
				set.mark(sl, s.pending.gen)
			} else {
				if admitted >= limit {
					other += pc.n
					continue
				}
				admitted++
				added = append(added, h) // marked once committed
			}
		}
		out = append(out, pc)
		outSlots = append(outSlots, slots[i])
	}
	if other > 0 {
		out = append(out, pathDelta{otherID, other})
		outSlots = append(outSlots, s.pending.lookup(logtally.OtherPath))
	}
	if len(added) > 0 {
		if ch.newHashes == nil {
			ch.newHashes = make(map[uint32][]uint64)
		}
		ch.newHashes[day] = added
	}
	return out, outSlots, nil
}

// loadSet builds a day's admission set from its shards and pending paths,
// making room for it under maxDaySets first.
func (s *Store) loadSet(tx *bolt.Tx, prefix []byte, pd *pendingDay) (*daySet, error) {
	for len(s.sets) >= maxDaySets {
		var oldest uint32
		first := true
		for day, set := range s.sets {
			if first || set.used < s.sets[oldest].used {
				oldest, first = day, false
			}
		}
		delete(s.sets, oldest)
	}
	set := &daySet{hashes: make(map[uint64]struct{})}
	c := s.bucket(tx, bucketDayPaths).Cursor()
	other := []byte(logtally.OtherPath)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		d := decoder{b: v}
		d.pathList(func(p []byte, _ int64) {
			if !bytes.Equal(p, other) {
				set.hashes[maphash.Bytes(s.seed, p)] = struct{}{}
			}
		})
		if d.err != nil || len(d.b) != 0 {
			return nil, fmt.Errorf("path shard: %w", ErrCorrupt)
		}
	}
	if pd != nil {
		for i, n := range pd.views {
			if n != 0 && s.pending.names[i] != logtally.OtherPath {
				set.hashes[maphash.String(s.seed, s.pending.names[i])] = struct{}{}
			}
		}
	}
	return set, nil
}

// compactTx merges the path log into the shards and deletes it: each day's
// page views into its shards if the day is within the hour retention, and
// into the all-time totals if the day is folded into them already. The sum
// merged is pending, plus extra: the change of the commit running it, which
// pending does not hold yet.
func (s *Store) compactTx(tx *bolt.Tx, now time.Time, extra *logChange) (*logChange, error) {
	ch := &logChange{compacted: true}
	lb := s.bucket(tx, bucketPathLog)
	counters := s.bucket(tx, bucketCounters)
	folded := uint32Key(counters.Get(keyFolded))
	floor := uint32Key(dayKey(now.Add(-s.cfg.HourRetention), s.loc))
	dpb, pb := s.bucket(tx, bucketDayPaths), s.bucket(tx, bucketPaths)

	days := slices.Collect(func(yield func(uint32) bool) {
		for d := range s.pending.days {
			if !yield(d) {
				return
			}
		}
	})
	if extra != nil {
		for _, d := range extra.days {
			days = append(days, d.day)
		}
	}
	slices.Sort(days)
	days = slices.Compact(days)
	s.pending.sortOrder()
	shards := make([][]logtally.PageCount, pathShards)
	for _, day := range days {
		if day < floor && day > folded {
			continue // expired and not folded: nowhere to go
		}
		for i := range shards {
			shards[i] = shards[i][:0]
		}
		if pd := s.pending.days[day]; pd != nil {
			for _, i := range s.pending.order { // sorted already
				if n := pd.get(i); n != 0 {
					sh := s.pending.shard[i]
					shards[sh] = append(shards[sh], logtally.PageCount{Path: s.pending.names[i], PageViews: n})
				}
			}
		}
		if extra != nil {
			var touched [pathShards]bool
			for _, d := range extra.days {
				if d.day == day {
					for _, pc := range d.paths {
						name := pathName(extra.b, pc.id)
						sh := shardOf(name)
						shards[sh] = append(shards[sh], logtally.PageCount{Path: name, PageViews: pc.n})
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
		if day >= floor {
			prefix := binary.BigEndian.AppendUint32(nil, day)
			over, err := mergeShards(dpb, counters, prefix, shards, s.cfg.MaxDayPaths)
			if err != nil {
				return nil, err
			}
			if over > 0 {
				ch.overflow = append(ch.overflow, day)
			}
			c := dpb.Cursor()
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				ch.shardBytes += int64(len(v))
			}
		}
		if day <= folded {
			if _, err := mergeShards(pb, counters, allTimePrefix, shards, s.cfg.MaxPaths); err != nil {
				return nil, err
			}
		}
	}
	var keys [][]byte
	c := lb.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := lb.Delete(k); err != nil {
			return nil, err
		}
	}
	return ch, nil
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

// compact merges the path log into the per-path shards in a transaction of
// its own. Commit asks RunPruner for it when the log grows; Prune runs it
// too. There is nothing to do once the log is empty, so it is idempotent.
func (s *Store) compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if len(s.pending.days) == 0 {
		return nil
	}
	now := s.now()
	err := s.writeTx(func(tx *bolt.Tx) (*logChange, error) { return s.compactTx(tx, now, nil) })
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// wantsCompaction reports whether the log has grown past its soft bounds.
// The bound in bytes follows the size of the shards a compaction rewrites,
// between compactMinBytes and compactSoftBytes: each compaction then
// rewrites about as many bytes as the log it merges (its cost per logged
// byte stays the same), and the log, which takes room in the file until it
// is merged, stays about as large as the shards, not a fixed 8 MiB that a
// small site's day would never amortise. The caller holds writeMu.
func (s *Store) wantsCompaction() bool {
	return s.pending.bytes >= s.compactAt || s.pending.paths >= compactSoftPaths
}
