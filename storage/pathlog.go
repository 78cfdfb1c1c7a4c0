package storage

import (
	"fmt"
	"hash/maphash"
	"sync"

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
//
// The log's files: this one holds it in memory and pairs its readers with
// the file; pathlog_dict.go numbers its paths; pathlog_append.go is what a
// commit appends, pathlog_admit.go which new paths a day takes, and
// pathlog_compact.go merges the log into the shards.

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
