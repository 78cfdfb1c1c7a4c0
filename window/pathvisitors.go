package window

import (
	"hash/maphash"

	"github.com/logtally/logtally"
)

// pathVisitors counts the distinct visitors of each path, exactly
// (Config.PathVisitors): pairs holds each pair of path and visitor in the
// window (a hash of both) -> its latest second and its path's hash, and
// visitors each path's distinct visitors, by the path's hash. Both are nil
// when the window does not count them.
type pathVisitors struct {
	pairs    map[uint64]pairState
	visitors map[uint64]int64
}

// pairState is what the window keeps of a pair of path and visitor.
type pairState struct {
	sec  int64  // the pair's latest page view
	path uint64 // the path's hash
}

// pathHash is a path's hash, as pairs and pathVisitors know it.
func pathHash(path []byte) uint64 { return maphash.Bytes(pathSeed, path) }

var pathSeed = maphash.MakeSeed()

// add counts a page view of a path (by its hash) by visitor v in slot s: a
// pair seen for the first time in the window adds a visitor to its path; a
// later page view moves the pair's latest second.
func (pv *pathVisitors) add(s *slot, path, v uint64) {
	k := pairKey(path, v)
	st, ok := pv.pairs[k]
	if ok && st.sec >= s.sec {
		return
	}
	if !ok {
		pv.visitors[path]++
	}
	pv.pairs[k] = pairState{sec: s.sec, path: path}
	s.pairs = append(s.pairs, k)
}

// pairKey mixes a path's hash with a visitor's into a pair's.
func pairKey(path, v uint64) uint64 {
	h := path ^ (v * 0x9e3779b97f4a7c15)
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// evict takes back the pairs of s, a second that leaves the window: a pair
// whose latest page view was in it leaves, and its path has a visitor less.
func (pv *pathVisitors) evict(s *slot) {
	for _, k := range s.pairs {
		if st := pv.pairs[k]; st.sec == s.sec {
			delete(pv.pairs, k)
			if pv.visitors[st.path]--; pv.visitors[st.path] <= 0 {
				delete(pv.visitors, st.path)
			}
		}
	}
}

// fill sets the distinct visitors of each of pages, if they are counted.
func (pv *pathVisitors) fill(pages []logtally.PageCount) {
	if pv.visitors == nil {
		return
	}
	for i := range pages {
		pages[i].Visitors = pv.visitors[pathHash([]byte(pages[i].Path))]
	}
}

// SeedPairs adds pairs of path and visitor stored with second sec, as
// Seed adds its counts: a restart keeps each path's distinct visitors.
// The page views are Seed's; only the pairs are added here.
func (w *Window) SeedPairs(sec int64, pairs map[string][]uint64) {
	sec = min(sec, w.now)
	if w.pathVisitors.pairs == nil || sec <= w.now-w.length {
		return
	}
	s := w.slot(sec)
	for p, vs := range pairs {
		h := pathHash([]byte(p))
		for _, v := range vs {
			w.pathVisitors.add(s, h, v)
		}
	}
	w.changed, w.paths.changed = true, true
}
