package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
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
// Until it is compacted, the log is also held in memory (pathLog), summed
// per day and path, so that PathCounts adds it to the shards without
// reading it, and compaction merges that sum without decoding the log
// again. Open rebuilds it from the log, and every transaction that changes
// the log changes it to match once it has committed.
//
// A log value is capped already: the commit decides, as the shards would,
// which new paths a day admits and which count as logtally.OtherPath
// (pathLog.admit). So compaction changes no answer, and a pending count is
// final.
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
	// The log holds at most compactHardPaths (day, path) counts and as many
	// paths in its dictionary (about 100 bytes each), plus one commit's: a
	// commit that would pass either compacts.
	compactSoftPaths = 1 << 17
	compactHardPaths = 1 << 18
	// maxPendingDays is how many days the log may hold: each costs an
	// array of 8 bytes per path in the dictionary.
	maxPendingDays = 4
	// maxDaySets is how many days' admission sets are kept between commits.
	maxDaySets = 2
)

// logEncoding is the version byte of a log value.
const logEncoding = 1

// otherID is the batch path number that stands for logtally.OtherPath.
const otherID = -1

// pathDelta is a path's page views in a batch, by the batch's path number.
type pathDelta struct {
	id int32
	n  int64
}

// dayDelta is a batch's page views per path on one day.
type dayDelta struct {
	day   uint32
	paths []pathDelta
}

// pathLog is the uncompacted path log in memory: its page views summed per
// day and path, the admission sets that decide which new paths a day takes,
// and when to compact.
//
// Readers never wait on a commit, whose fsyncs take milliseconds. The
// writer does not hold mu while a transaction commits: it publishes the
// change the transaction makes before committing it, and applies it after,
// each under a short lock. A reader pairs the counts with the file its own
// read transaction sees by transaction id (see counts): if its file holds a
// change not applied yet, it adds the published change itself; if its file
// is older than the counts, it opens a newer transaction and asks again.
type pathLog struct {
	// mu guards what readers read: the dictionary's numbering, days, and
	// the transaction ids. The writer (the holder of Store.writeMu) changes
	// them under mu and reads them without it.
	mu   sync.RWMutex
	dict dict
	days map[uint32]*pendingDay
	// applied is the id of the last transaction that changed the log: the
	// counts hold its change. next, if not nil, is the change of
	// transaction nextTx, which is being committed.
	applied, nextTx int
	next            *logChange

	// The rest is the writer's, used under Store.writeMu.
	paths     int                // nonzero counts over all days
	bytes     int64              // size of the log values
	sets      map[uint32]*daySet // admission sets of days that may reach their cap
	uses      uint64             // writes, to evict the least recently used set
	seed      maphash.Seed       // of the admission sets' hashes
	compactAt int64              // log size that asks for a compaction (see wantsCompaction)
	wake      chan struct{}      // asks RunPruner for a compaction
}

func newPathLog() *pathLog {
	return &pathLog{days: make(map[uint32]*pendingDay), dict: dict{slot: make(map[string]int32)},
		sets: make(map[uint32]*daySet), seed: maphash.MakeSeed(), compactAt: compactMinBytes,
		wake: make(chan struct{}, 1)}
}

// dict numbers the paths of the log, so that a day's counts are an array.
// It is the log's one dictionary, kept across compactions (up to
// compactSoftPaths paths) so that a busy site's paths are not numbered
// again after each.
type dict struct {
	slot  map[string]int32
	names []string
	shard []uint8 // shardOf(names[i])
	// order lists numbers by shard, then path: compaction merges a day's
	// paths shard by shard in that order, and sorting a busy day's paths
	// again for every compaction would cost more than the merge. Numbers
	// from len(order) on are not in it yet (sortOrder). Only the writer
	// uses it.
	order []int32
}

// lookup returns a path's number, or -1.
func (d *dict) lookup(path string) int32 {
	if i, ok := d.slot[path]; ok {
		return i
	}
	return -1
}

// insert numbers a new path.
func (d *dict) insert(path string) int32 {
	i := int32(len(d.names))
	d.slot[path] = i
	d.names = append(d.names, path)
	d.shard = append(d.shard, uint8(shardOf(path)))
	return i
}

func (d *dict) len() int { return len(d.names) }

// clear forgets every path.
func (d *dict) clear() {
	clear(d.slot)
	clear(d.names) // let the strings go
	d.names, d.shard, d.order = d.names[:0], d.shard[:0], d.order[:0]
}

// sortOrder brings the paths numbered since the last call into order.
func (d *dict) sortOrder() {
	if len(d.order) == len(d.names) {
		return
	}
	byShardPath := func(a, b int32) int {
		if c := cmp.Compare(d.shard[a], d.shard[b]); c != 0 {
			return c
		}
		return cmp.Compare(d.names[a], d.names[b])
	}
	fresh := make([]int32, 0, len(d.names)-len(d.order))
	for i := len(d.order); i < len(d.names); i++ {
		fresh = append(fresh, int32(i))
	}
	slices.SortFunc(fresh, byShardPath)
	merged := make([]int32, 0, len(d.names))
	i, j := 0, 0
	for i < len(d.order) && j < len(fresh) {
		if byShardPath(d.order[i], fresh[j]) < 0 {
			merged = append(merged, d.order[i])
			i++
		} else {
			merged = append(merged, fresh[j])
			j++
		}
	}
	merged = append(merged, d.order[i:]...)
	d.order = append(merged, fresh[j:]...)
}

// pendingDay holds one day's pending page views by path number.
type pendingDay struct {
	views []int64
	paths int // nonzero counts
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

// add adds page views to a day's count of path number i. The caller is the
// writer, under mu once readers may be about.
func (l *pathLog) add(day uint32, i int32, n int64) {
	pd := l.days[day]
	if pd == nil {
		pd = &pendingDay{}
		l.days[day] = pd
	}
	if int(i) >= len(pd.views) {
		pd.views = append(pd.views, make([]int64, int(i)+1-len(pd.views))...)
	}
	if pd.views[i] == 0 {
		pd.paths++
		l.paths++
	}
	pd.views[i] += n
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
	used   uint64 // pathLog.uses when last used, for eviction
	// known marks, by number in the dictionary, the paths found admitted
	// already: once admitted a path stays so, and a busy day's commits
	// mostly bring paths it holds. It is emptied with the dictionary.
	known []uint64
}

// knows reports whether path number i is marked admitted.
func (set *daySet) knows(i int32) bool {
	return i >= 0 && int(i)/64 < len(set.known) && set.known[i/64]&(1<<(i%64)) != 0
}

// mark marks path number i admitted.
func (set *daySet) mark(i int32) {
	for int(i)/64 >= len(set.known) {
		set.known = append(set.known, 0)
	}
	set.known[i/64] |= 1 << (i % 64)
}

// logChange is what a write transaction does to the log: published before
// it commits, applied to the counts and the admission sets after.
type logChange struct {
	days  []loggedDay // a commit's page views as logged
	fresh []string    // paths new to the dictionary, numbered from its length on
	bytes int64       // size of the log values written
	// compacted is set when the whole log was compacted: the counts
	// restart empty.
	compacted bool
	// shardBytes is the size of the shards a compaction merged into.
	shardBytes int64
	overflow   []uint32 // days whose shards counted more paths than their admission set
	newHashes  map[uint32][]uint64
}

// loggedDay is a day's page views as a commit logs them: after admission,
// each path with its number in the dictionary.
type loggedDay struct {
	day   uint32
	paths []logtally.PageCount
	slots []int32 // dictionary numbers; -1 until numbered
	ids   []int32 // the batch's path numbers, or otherID
}

// publish makes ch, the change of transaction txID, visible to readers
// whose transaction sees it before it is applied, and numbers the paths new
// to the dictionary. The caller is the writer, about to commit.
func (l *pathLog) publish(ch *logChange, txID int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ch.fresh {
		l.dict.insert(p)
	}
	l.next, l.nextTx = ch, txID
}

// withdraw forgets the published change: its transaction did not commit.
// Numbers it gave new paths stay, unused.
func (l *pathLog) withdraw() {
	l.mu.Lock()
	l.next = nil
	l.mu.Unlock()
}

// apply brings the counts and the admission sets in step with the
// published change, whose transaction has committed.
func (l *pathLog) apply(ch *logChange) {
	l.mu.Lock()
	l.applied, l.next = l.nextTx, nil
	emptied := false
	if ch.compacted {
		clear(l.days)
		l.paths, l.bytes = 0, 0
		// Past compactSoftPaths, a site is better served by numbering
		// its paths again than by holding paths no longer pending.
		if emptied = l.dict.len() > compactSoftPaths; emptied {
			l.dict.clear()
		}
	} else {
		for _, d := range ch.days {
			for i, sl := range d.slots {
				l.add(d.day, sl, d.paths[i].PageViews)
			}
		}
		l.bytes += ch.bytes
	}
	l.mu.Unlock()

	if ch.compacted {
		l.compactAt = min(max(ch.shardBytes, compactMinBytes), compactSoftBytes)
	}
	if emptied {
		for _, set := range l.sets {
			set.known = set.known[:0]
		}
	}
	for _, d := range ch.days {
		if set := l.sets[d.day]; set != nil {
			for i, sl := range d.slots {
				if d.paths[i].Path != logtally.OtherPath {
					set.mark(sl) // the day admitted it
				}
			}
		}
	}
	for day, hs := range ch.newHashes {
		if set := l.sets[day]; set != nil {
			for _, h := range hs {
				set.hashes[h] = struct{}{}
			}
		}
	}
	for _, day := range ch.overflow {
		delete(l.sets, day)
	}
}

// seenBy returns the change that the file seen by read transaction txID
// holds but the counts do not have yet (nil if none), or stale if the
// counts have moved past that file. Called under l.mu.
func (l *pathLog) seenBy(txID int) (next *logChange, stale bool) {
	if txID < l.applied {
		return nil, true
	}
	if l.next != nil && txID >= l.nextTx {
		return l.next, false
	}
	return nil, false // none, or the file is from before it
}

// counts calls fn with the pending page views, per day, of each of paths
// (by index) that the file seen by read transaction txID holds in its log.
// It reports false, having called fn for nothing, if the counts have moved
// past that file: the caller opens a newer transaction and asks again.
func (l *pathLog) counts(txID int, paths []string, fn func(i int, day uint32, n int64)) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	next, stale := l.seenBy(txID)
	if stale {
		return false
	}
	if next != nil && next.compacted {
		return true // the file holds the whole log in its shards
	}
	var wanted map[int32][]int // paths whose change next holds, by number
	for i, p := range paths {
		sl := l.dict.lookup(p)
		if sl < 0 {
			continue
		}
		for day, pd := range l.days {
			if n := pd.get(sl); n != 0 {
				fn(i, day, n)
			}
		}
		if next != nil {
			if wanted == nil {
				wanted = make(map[int32][]int)
			}
			wanted[sl] = append(wanted[sl], i)
		}
	}
	if len(wanted) == 0 {
		return true
	}
	for _, d := range next.days {
		for j, sl := range d.slots {
			for _, i := range wanted[sl] {
				fn(i, d.day, d.paths[j].PageViews)
			}
		}
	}
	return true
}

// dayCounts calls fn with every pending path count of the days that want
// says, that the file seen by read transaction txID holds in its log; it
// reports false, as counts does, if the counts have moved past that file.
// path is only valid during the call.
func (l *pathLog) dayCounts(txID int, want func(day uint32) bool, fn func(path string, n int64)) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	next, stale := l.seenBy(txID)
	if stale {
		return false
	}
	if next != nil && next.compacted {
		return true // the file holds the whole log in its shards
	}
	for day, pd := range l.days {
		if want(day) {
			for i, n := range pd.views {
				if n != 0 {
					fn(l.dict.names[i], n)
				}
			}
		}
	}
	if next != nil {
		for _, d := range next.days {
			if want(d.day) {
				for _, pc := range d.paths {
					fn(pc.Path, pc.PageViews)
				}
			}
		}
	}
	return true
}

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

// numbering gives the paths of the batch being committed their numbers in
// the log's dictionary; the paths the dictionary lacks are given the
// numbers after its own, which they take when the change is published. It
// is the writer's scratch, kept from one commit to the next.
//
// Looking every distinct path of a commit up in the dictionary would cost
// more than the rest of the commit's path work: a busy site's commit brings
// tens of thousands, each a few cache misses. So numbering remembers, by
// batch path number, the dictionary number the path had (hint), and
// trusts it only if the dictionary still names the same path there: a
// batch keeps its numbers across commits, and the dictionary holds the
// batch's own strings, so the check is mostly a pointer comparison. A
// stale hint (another batch, a batch that renumbered, a dictionary emptied
// by compaction) fails the check and the path is looked up.
type numbering struct {
	dict  *dict
	names []string // the batch's paths
	// hint holds, by batch path number, a dictionary number plus 1; or -1
	// if the path is not in the dictionary, found by this commit (absent
	// lists those); or 0.
	hint   []int32
	absent []int32
	fresh  []string // paths numbered past the dictionary, in order
	// other is the number plus 2 of logtally.OtherPath in this commit, 1
	// if the dictionary lacks it, 0 if not looked up yet.
	other int32
}

// start readies nb for a batch's paths.
func (nb *numbering) start(d *dict, names []string) {
	nb.dict, nb.names, nb.other, nb.fresh = d, names, 0, nb.fresh[:0]
	if len(nb.hint) < len(names) {
		nb.hint = append(nb.hint, make([]int32, len(names)+len(names)/4-len(nb.hint))...)
	}
}

// name returns batch path id's path.
func (nb *numbering) name(id int32) string {
	if id == otherID {
		return logtally.OtherPath
	}
	return nb.names[id]
}

// lookup returns the dictionary number of batch path id, or -1.
func (nb *numbering) lookup(id int32) int32 {
	name := nb.name(id)
	if name == logtally.OtherPath { // a path may be named so: one number for both
		if nb.other == 0 {
			nb.other = nb.dict.lookup(name) + 2
		}
		return nb.other - 2
	}
	switch h := nb.hint[id]; {
	case h < 0:
		return -1
	case h > 0 && nb.named(h-1, name):
		return h - 1
	}
	sl := nb.dict.lookup(name)
	nb.hint[id] = sl + 1
	if sl < 0 {
		nb.hint[id] = -1
		nb.absent = append(nb.absent, id)
	}
	return sl
}

// named reports whether number sl is name's, in the dictionary or among
// the paths numbered past it.
func (nb *numbering) named(sl int32, name string) bool {
	if n := nb.dict.len(); int(sl) >= n {
		return int(sl)-n < len(nb.fresh) && nb.fresh[int(sl)-n] == name
	}
	return nb.dict.names[sl] == name
}

// number returns the dictionary number of batch path id, numbering it past
// the dictionary if the dictionary lacks it.
func (nb *numbering) number(id int32) int32 {
	if sl := nb.lookup(id); sl >= 0 {
		return sl
	}
	sl := int32(nb.dict.len() + len(nb.fresh))
	nb.fresh = append(nb.fresh, nb.name(id))
	if nb.name(id) == logtally.OtherPath {
		nb.other = sl + 2
	} else {
		nb.hint[id] = sl + 1
	}
	return sl
}

// reset lets the batch go after its commit. The hints stay, but for what
// the commit found absent: the dictionary may hold it now.
func (nb *numbering) reset() {
	for _, id := range nb.absent {
		if nb.hint[id] < 0 {
			nb.hint[id] = 0
		}
	}
	nb.dict, nb.names, nb.absent = nil, nil, nb.absent[:0]
}

// appendLog appends a day's page views per path to the log, cut in values
// of about logValueSize: version, then a path list (codec.go). It returns
// the bytes written.
func appendLog(lb *bolt.Bucket, a *arena, day uint32, paths []logtally.PageCount) (int64, error) {
	lb.FillPercent = 1 // appended in key order
	var total int64
	for len(paths) > 0 {
		size, n := 1+binary.MaxVarintLen64, 0
		for n < len(paths) && (n == 0 || size < logValueSize) {
			size += entrySize(paths[n].Path, paths[n].PageViews)
			n++
		}
		v := appendPathList(append(a.alloc(size), logEncoding), paths[:n])
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

// load rebuilds the counts from the log that tx sees, before any reader or
// writer uses l.
func (l *pathLog) load(tx *bolt.Tx, lb *bolt.Bucket) error {
	c := lb.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != logKeySize {
			return fmt.Errorf("path log key %x: %w", k, ErrCorrupt)
		}
		day := uint32Key(k)
		err := decodeLog(v, func(path []byte, n int64) {
			i := l.dict.lookup(string(path))
			if i < 0 {
				i = l.dict.insert(string(path))
			}
			l.add(day, i, n)
		})
		if err != nil {
			return fmt.Errorf("path log %x: %w", k, err)
		}
		l.bytes += int64(len(v))
	}
	l.applied = tx.ID()
	return nil
}

// siteChange is a change a write transaction makes to one site's path log.
type siteChange struct {
	log *pathLog
	ch  *logChange // nil: none
}

// writeTx runs fn in a write transaction and commits it. The caller holds
// writeMu. The changes to path logs that fn returns are published before
// the commit and applied after it, so that no log's lock is held while the
// transaction commits.
func (s *Store) writeTx(fn func(tx *bolt.Tx) ([]siteChange, error)) error {
	tx, err := s.db.Begin(true)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after fn failed or panicked; a no-op once committed
	changes, err := fn(tx)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if c.ch != nil {
			c.log.publish(c.ch, tx.ID())
		}
	}
	if err := s.commit(tx); err != nil {
		for _, c := range changes {
			if c.ch != nil {
				c.log.withdraw()
			}
		}
		return err
	}
	for _, c := range changes {
		if c.ch != nil {
			c.log.apply(c.ch)
		}
	}
	return nil
}

// logPaths appends a commit's page views per path and day (in day order) to
// the log, deciding which new paths each day admits. It compacts the whole
// log in the same transaction when the log is past a hard bound, or when
// late lines (of days already folded into the all-time totals, which only
// compaction adds them to) may reach the all-time cap: pending counts are
// final only while nothing is capped at compaction. Days before floor are
// past the retention of per-day page counts.
func (s *Site) logPaths(tx *bolt.Tx, b *tally.Batch, days []dayDelta, floor uint32) (*logChange, error) {
	l := s.log
	counters := s.bucket(tx, bucketCounters)
	lb := s.bucket(tx, bucketPathLog)
	folded := uint32Key(counters.Get(keyFolded))
	nb := &s.numbers
	nb.start(&l.dict, b.Paths())
	l.uses++
	ch := &logChange{}
	newCounts, lateCounts, newDays := 0, 0, 0
	for _, dd := range days {
		dayPart, late := dd.day >= floor, dd.day <= folded
		if !dayPart && !late {
			continue // expired and never folded: as before, not counted
		}
		pd := l.days[dd.day]
		if pd == nil {
			newDays++
		}
		sc, k := &s.st.scratch, len(dd.paths)
		d := loggedDay{day: dd.day, paths: carve(&sc.logPaths, k), slots: carve(&sc.logSlots, k), ids: carve(&sc.logIDs, k)}
		fresh := 0
		for i, pc := range dd.paths {
			d.paths[i] = logtally.PageCount{Path: nb.name(pc.id), PageViews: pc.n}
			d.slots[i], d.ids[i] = nb.lookup(pc.id), pc.id
			if !pd.has(d.slots[i]) && d.paths[i].Path != logtally.OtherPath {
				fresh++
			}
		}
		if dayPart {
			var err error
			if d, err = l.admit(counters, s.bucket(tx, bucketDayPaths), s.cfg.MaxDayPaths, d, pd, fresh, ch); err != nil {
				return nil, err
			}
		}
		for i, sl := range d.slots {
			if sl < 0 {
				d.slots[i] = nb.number(d.ids[i])
			}
			if !pd.has(d.slots[i]) {
				newCounts++
			}
		}
		if late {
			lateCounts += len(d.paths)
		}
		n, err := appendLog(lb, &s.st.scratch.values, d.day, d.paths)
		if err != nil {
			return nil, err
		}
		ch.bytes += n
		ch.days = append(ch.days, d)
	}
	ch.fresh = nb.fresh
	inline := l.bytes+ch.bytes > compactHardBytes || l.paths+newCounts > compactHardPaths ||
		l.dict.len()+len(ch.fresh) > compactHardPaths || len(l.days)+newDays > maxPendingDays
	if lateCounts > 0 && !inline {
		// Every late path may be new to the all-time totals.
		distinct := int(getUvarint(counters.Get(pathCounterKey(allTimePrefix))))
		for day, pd := range l.days {
			if day <= folded {
				distinct += pd.paths
			}
		}
		inline = distinct+lateCounts > s.cfg.MaxPaths
	}
	if inline {
		// The compaction merges this commit's paths too: none is numbered.
		c, err := s.compactTx(tx, ch)
		if err != nil {
			return nil, err
		}
		c.newHashes = ch.newHashes
		return c, nil
	}
	return ch, nil
}

// admit decides which of a day's paths the day admits, as its shards would:
// every path it holds already, and new paths while it has fewer than limit;
// the page views of the others are logged as logtally.OtherPath. pd is the
// day's pending counts, and fresh how many of the paths are not pending on
// the day yet. While the day's stored distinct paths, its pending ones and
// the fresh ones stay within the cap, every path is admitted without
// looking further; past that, the day's admission set tells new paths from
// known ones. The caller is the writer.
func (l *pathLog) admit(counters, dayPaths *bolt.Bucket, limit int, d loggedDay, pd *pendingDay,
	fresh int, ch *logChange) (loggedDay, error) {
	prefix := dayBytes(d.day)
	set := l.sets[d.day]
	if set == nil {
		stored := int(getUvarint(counters.Get(pathCounterKey(prefix))))
		known := 0
		if pd != nil {
			known = pd.paths
		}
		if stored+known+fresh <= limit {
			return d, nil
		}
		var err error
		if set, err = l.loadSet(dayPaths, prefix, pd); err != nil {
			return d, err
		}
		l.sets[d.day] = set
	}
	set.used = l.uses
	out := loggedDay{day: d.day, paths: d.paths[:0], slots: d.slots[:0], ids: d.ids[:0]} // filtered in place
	var other int64
	admitted := len(set.hashes)
	var added []uint64
	for i, pc := range d.paths {
		sl, id := d.slots[i], d.ids[i]
		if pc.Path == logtally.OtherPath {
			other += pc.PageViews
			continue
		}
		if !pd.has(sl) && !set.knows(sl) {
			h := maphash.String(l.seed, pc.Path)
			if _, ok := set.hashes[h]; ok {
				if sl >= 0 {
					set.mark(sl)
				}
			} else {
				if admitted >= limit {
					other += pc.PageViews
					continue
				}
				admitted++
				added = append(added, h) // marked once committed
			}
		}
		out.paths = append(out.paths, pc)
		out.slots = append(out.slots, sl)
		out.ids = append(out.ids, id)
	}
	if other > 0 {
		out.paths = append(out.paths, logtally.PageCount{Path: logtally.OtherPath, PageViews: other})
		out.slots = append(out.slots, -1)
		out.ids = append(out.ids, otherID)
	}
	if len(added) > 0 {
		if ch.newHashes == nil {
			ch.newHashes = make(map[uint32][]uint64)
		}
		ch.newHashes[d.day] = added
	}
	return out, nil
}

// loadSet builds a day's admission set from its shards and pending paths,
// making room for it under maxDaySets first.
func (l *pathLog) loadSet(dayPaths *bolt.Bucket, prefix []byte, pd *pendingDay) (*daySet, error) {
	for len(l.sets) >= maxDaySets {
		var oldest uint32
		first := true
		for day, set := range l.sets {
			if first || set.used < l.sets[oldest].used {
				oldest, first = day, false
			}
		}
		delete(l.sets, oldest)
	}
	set := &daySet{hashes: make(map[uint64]struct{})}
	c := dayPaths.Cursor()
	other := []byte(logtally.OtherPath)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		d := decoder{b: v}
		d.pathList(func(p []byte, _ int64) {
			if !bytes.Equal(p, other) {
				set.hashes[maphash.Bytes(l.seed, p)] = struct{}{}
			}
		})
		if d.err != nil || len(d.b) != 0 {
			return nil, fmt.Errorf("path shard: %w", ErrCorrupt)
		}
	}
	if pd != nil {
		for i, n := range pd.views {
			if n != 0 && l.dict.names[i] != logtally.OtherPath {
				set.hashes[maphash.String(l.seed, l.dict.names[i])] = struct{}{}
			}
		}
	}
	return set, nil
}

// compactTx merges the path log into the shards and deletes it: each day's
// page views into its shards if the day is within the hour retention, and
// into the all-time totals if the day is folded into them already. The sum
// merged is the log's counts, plus extra: the change of the commit running
// it, which the counts do not hold yet.
func (s *Site) compactTx(tx *bolt.Tx, extra *logChange) (*logChange, error) {
	l := s.log
	ch := &logChange{compacted: true}
	lb := s.bucket(tx, bucketPathLog)
	counters := s.bucket(tx, bucketCounters)
	folded := uint32Key(counters.Get(keyFolded))
	floor := s.floors(tx).dayPaths
	dpb, pb := s.bucket(tx, bucketDayPaths), s.bucket(tx, bucketPaths)

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
	days = slices.Compact(days)
	l.dict.sortOrder()
	shards := make([][]logtally.PageCount, pathShards)
	for _, day := range days {
		if day < floor && day > folded {
			continue // expired and not folded: nowhere to go
		}
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
		if extra != nil {
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
		if day >= floor {
			prefix := dayBytes(day)
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

// compact merges every site's path log into its per-path shards, each in
// a transaction of its own. Prune runs it; RunPruner compacts the logs
// that a commit found grown (compactWanted).
func (s *Store) compact(ctx context.Context) error {
	for _, si := range s.siteList() {
		if err := si.compact(ctx); err != nil {
			return err
		}
	}
	return nil
}

// compactWanted compacts the path logs that have grown past their soft
// bounds.
func (s *Store) compactWanted(ctx context.Context) error {
	for _, si := range s.siteList() {
		s.writeMu.Lock()
		want := si.log.wantsCompaction()
		s.writeMu.Unlock()
		if !want {
			continue
		}
		if err := si.compact(ctx); err != nil {
			return err
		}
	}
	return nil
}

// compact merges the site's path log into its per-path shards in a
// transaction of its own. There is nothing to do once the log is empty, so
// it is idempotent.
func (s *Site) compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.st.writeMu.Lock()
	defer s.st.writeMu.Unlock()
	if len(s.log.days) == 0 {
		return nil
	}
	err := s.st.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		ch, err := s.compactTx(tx, nil)
		return []siteChange{{s.log, ch}}, err
	})
	if err != nil {
		return fmt.Errorf("site %s: compact: %w", s.name, err)
	}
	return nil
}
