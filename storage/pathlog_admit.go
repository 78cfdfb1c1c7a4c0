package storage

import (
	"bytes"
	"fmt"
	"hash/maphash"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// maxDaySets is how many days' admission sets are kept between commits.
const maxDaySets = 2

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
	set, err := l.setFor(counters, dayPaths, limit, d.day, pd, fresh)
	if err != nil || set == nil {
		return d, err
	}
	set.used = l.uses
	out, added := l.filter(set, limit, d, pd)
	if len(added) > 0 {
		if ch.newHashes == nil {
			ch.newHashes = make(map[uint32][]uint64)
		}
		ch.newHashes[d.day] = added
	}
	return out, nil
}

// setFor returns the admission set of day, loading it if the day's stored
// distinct paths, its pending ones (pd) and fresh ones may pass limit; nil
// if they may not, and every path is admitted.
func (l *pathLog) setFor(counters, dayPaths *bolt.Bucket, limit int, day uint32, pd *pendingDay,
	fresh int) (*daySet, error) {
	if set := l.sets[day]; set != nil {
		return set, nil
	}
	prefix := dayBytes(day)
	stored := int(getUvarint(counters.Get(pathCounterKey(prefix))))
	known := 0
	if pd != nil {
		known = pd.paths
	}
	if stored+known+fresh <= limit {
		return nil, nil
	}
	set, err := l.loadSet(dayPaths, prefix, pd)
	if err != nil {
		return nil, err
	}
	l.sets[day] = set
	return set, nil
}

// filter keeps, of d's paths, those the day admits by its set: known ones,
// and new ones while it holds fewer than limit; the rest is added up as
// logtally.OtherPath. It filters d in place, and returns the hashes of the
// new paths it admitted, which the set takes once the commit is in.
func (l *pathLog) filter(set *daySet, limit int, d loggedDay, pd *pendingDay) (loggedDay, []uint64) {
	out := loggedDay{day: d.day, paths: d.paths[:0], slots: d.slots[:0], ids: d.ids[:0]}
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
	return out, added
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
