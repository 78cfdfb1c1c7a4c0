package window

import (
	"github.com/logtally/logtally"
)

// pathVisitors counts the distinct visitors of each path, exactly
// (Config.PathVisitors), for the paths the path table holds: pairs holds
// each pair of a held path and a visitor in the window -> its latest
// second and the path's entry, and each entry counts its pairs (see
// pathEntry.visitors). pairs is nil when the window does not count them.
//
// Memory follows the table, not the paths seen: a pair belongs to the
// entry (and its generation) the path held when the pair was made, so a
// path folded out of the table (Space-Saving) leaves its pairs stale
// rather than counted, and they are swept once they outnumber the live
// ones. At most max live pairs are kept (and so at most about twice as
// many in all, the stale ones included); past it a new pair is not, the path's
// visitors are lower bounds, and the snapshot says so (PageVisitorsFrom)
// until the second of the last pair turned away leaves the window.
type pathVisitors struct {
	pairs   map[uint64]pairState
	max     int
	stale   int   // pairs of entries that have changed path since
	dropped int64 // the second of the last pair turned away, or minSecond
}

// minSecond is a second before any window.
const minSecond = -1 << 62

// pairState is what the window keeps of a pair of path and visitor.
type pairState struct {
	sec int64  // the pair's latest page view
	id  uint32 // the path's entry in the table ...
	gen uint16 // ... and its generation when the pair was made
}

// minSweep is the fewest stale pairs worth a sweep.
const minSweep = 1024

// pairKey mixes an entry, its generation and a visitor into a pair's key.
func pairKey(r pathRef, v uint64) uint64 {
	h := (uint64(r.id)<<16 | uint64(r.gen)) ^ (v * 0x9e3779b97f4a7c15)
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// add counts a page view by visitor v in slot s of the path that r, the
// path table's answer for it, names: a pair seen for the first time in the
// window adds a visitor to its path; a later page view moves the pair's
// latest second.
func (w *Window) addPair(s *slot, r pathRef, v uint64) {
	pv, t := &w.pathVisitors, w.paths
	e := &t.entries[r.id]
	if e.gen != r.gen {
		return // the entry changed path since: the path is no longer held
	}
	k := pairKey(r, v)
	st, ok := pv.pairs[k]
	if ok && st.sec >= s.sec {
		return
	}
	if !ok {
		if len(pv.pairs)-pv.stale >= pv.max { // the stale go by the next sweep
			pv.dropped = max(pv.dropped, s.sec)
			return
		}
		e.visitors++
	}
	pv.pairs[k] = pairState{sec: s.sec, id: r.id, gen: r.gen}
	s.pairs = append(s.pairs, k)
}

// evictPairs takes back the pairs of s, a second that leaves the window: a
// pair whose latest page view was in it leaves, and its path has a
// visitor less.
func (w *Window) evictPairs(s *slot) {
	pv, t := &w.pathVisitors, w.paths
	for _, k := range s.pairs {
		st, ok := pv.pairs[k]
		if !ok || st.sec != s.sec {
			continue
		}
		delete(pv.pairs, k)
		if e := &t.entries[st.id]; e.gen == st.gen {
			e.visitors--
		} else {
			pv.stale--
		}
	}
	s.pairs = s.pairs[:0]
}

// folded is told that an entry holding visitors pairs changed path: they
// are stale, and swept once they are many.
func (w *Window) folded(visitors int64) {
	pv := &w.pathVisitors
	if pv.pairs == nil {
		return
	}
	pv.stale += int(visitors)
	if pv.stale > max(minSweep, len(pv.pairs)/2) {
		w.sweepPairs()
	}
}

// sweepPairs deletes the stale pairs, and from each second's list the
// keys of pairs it no longer holds (deleted, or moved to a later second),
// so that the lists, too, hold about the live pairs.
func (w *Window) sweepPairs() {
	pv, t := &w.pathVisitors, w.paths
	for k, st := range pv.pairs {
		if t.entries[st.id].gen != st.gen {
			delete(pv.pairs, k)
		}
	}
	pv.stale = 0
	for i := range w.slots {
		s := &w.slots[i]
		kept := s.pairs[:0]
		for _, k := range s.pairs {
			if st, ok := pv.pairs[k]; ok && st.sec == s.sec {
				kept = append(kept, k)
			}
		}
		if cap(kept) > 2*len(kept)+64 { // give back what the stale held
			kept = append([]uint64(nil), kept...)
		}
		s.pairs = kept
	}
}

// fill sets the distinct visitors of each of pages, if they are counted.
func (w *Window) fillVisitors(pages []logtally.PageCount) {
	if w.pathVisitors.pairs == nil {
		return
	}
	t := w.paths
	for i := range pages {
		if id, ok := t.index[pages[i].Path]; ok {
			pages[i].Visitors = t.entries[id].visitors
		}
	}
}

// SeedPairs adds pairs of path and visitor stored with second sec, as
// Seed adds its counts: a restart keeps each path's distinct visitors.
// The page views are Seed's, which must come first: only the pairs of
// paths the table holds are added.
func (w *Window) SeedPairs(sec int64, pairs map[string][]uint64) {
	sec = min(sec, w.now)
	if w.pathVisitors.pairs == nil || sec <= w.now-w.length {
		return
	}
	s := w.slot(sec)
	t := w.paths
	for p, vs := range pairs {
		id, ok := t.index[p]
		if !ok {
			continue
		}
		r := pathRef{id: uint32(id), gen: t.entries[id].gen}
		for _, v := range vs {
			w.addPair(s, r, v)
		}
	}
	w.changed, w.paths.changed = true, true
}
