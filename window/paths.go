package window

import (
	"cmp"
	"slices"

	"github.com/logtally/logtally"
)

// pathTable counts page views per path for at most max paths, by the
// Space-Saving algorithm (Metwally, Agrawal, El Abbadi 2005) adapted to a
// sliding window.
//
// Each entry holds one path and a count. When a new path arrives and the
// table is full, the entry with the smallest count is given to the new path,
// which inherits that count. Because the counts of all entries add up to the
// page views in the window, the smallest is at most PageViews/max; a path
// holding more than that share is therefore never the one replaced, and as
// long as it is not replaced its count is exact.
//
// The window adds with add and takes back, second by second, with remove: a
// pathRef records which entry a second's page views went to. The count of an
// entry is always the sum of the refs that still point to it, so it reaches
// zero exactly when the last second that touched it leaves the window, and
// the entry is freed then. Refs also carry the entry's generation, so that
// own, the part of the count the current path earned itself, stays exact too:
// own is what pages report, count is what decides who is replaced.
//
// Entries are kept in buckets of equal count, and buckets in a list sorted by
// count (the "stream-summary" of the paper). Moving a count by one is O(1);
// the smallest entry is the head of the first bucket, and the top pages are
// read from the last bucket down.
type pathTable struct {
	max     int
	index   map[string]int32 // path -> entry
	entries []pathEntry
	free    []int32 // unused entries
	buckets []countBucket
	freeB   []int32 // unused buckets
	minB    int32   // bucket with the smallest count, or nilID
	maxB    int32   // bucket with the largest count, or nilID
	folded  int64   // paths that took over another path's entry, ever
	changed bool    // counts changed since top was last called

	// foldedVisitors are the visitors (see pathVisitors) of entries that
	// changed path or were freed since the window last looked.
	foldedVisitors int64

	// The window's refs to the table: refs in all, and stale ones, whose
	// entry has changed path since. Stale refs only keep the inherited part
	// of a count sliding; the window merges them when they pile up (see
	// Window.compactRefs).
	refs, stale int
}

const nilID = -1

type pathEntry struct {
	path       string
	own        int64  // page views of path since it took this entry, in the window
	gen        uint16 // bumped whenever the entry changes path
	refs       int32  // refs of generation gen held by the window
	visitors   int64  // distinct visitors of path, with Config.PathVisitors
	bucket     int32
	prev, next int32 // neighbours in the bucket
}

type countBucket struct {
	count      int64
	head       int32 // first entry
	prev, next int32 // buckets with the next lower and higher count
}

// pathRef is what one second remembers about the page views it gave to one
// entry: n views, to entry id while it had generation gen. There is one per
// path and second, so it is kept to 8 bytes: n of more than maxRefViews
// takes several refs, and gen wraps. A wrapped gen can only mislead own if
// an entry changes path 65,536 times while one of its refs is in the window.
type pathRef struct {
	id  uint32
	gen uint16
	n   uint16
}

// maxRefViews is the most page views one pathRef holds.
const maxRefViews = 1<<16 - 1

func newPathTable(max int) *pathTable {
	return &pathTable{
		max:   max,
		index: make(map[string]int32), // grows with the paths: a quiet site's window stays small
		minB:  nilID,
		maxB:  nilID,
	}
}

// len returns the number of paths held.
func (t *pathTable) len() int { return len(t.index) }

// add counts n <= maxRefViews page views of path and returns the entry
// they went to.
func (t *pathTable) add(path []byte, n int64) pathRef {
	t.changed = true
	if id, ok := t.index[string(path)]; ok {
		e := &t.entries[id]
		e.own += n
		t.setCount(id, t.buckets[e.bucket].count+n)
		return pathRef{id: uint32(id), gen: e.gen, n: uint16(n)}
	}
	if len(t.index) >= t.max {
		// Space-Saving: the path takes over the smallest entry and its count.
		id := t.buckets[t.minB].head
		e := &t.entries[id]
		t.foldedVisitors += e.visitors // they were the old path's
		e.visitors = 0
		delete(t.index, e.path)
		e.path = string(path)
		e.gen++
		e.own = n
		t.stale += int(e.refs)
		e.refs = 0
		t.index[e.path] = id
		t.folded++
		t.setCount(id, t.buckets[e.bucket].count+n)
		return pathRef{id: uint32(id), gen: e.gen, n: uint16(n)}
	}
	var id int32
	if k := len(t.free); k > 0 {
		id = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		id = int32(len(t.entries))
		t.entries = append(t.entries, pathEntry{})
	}
	e := &t.entries[id]
	e.path = string(path)
	e.gen++
	e.own = n
	t.index[e.path] = id
	t.link(id, t.bucketFor(t.minB, n))
	return pathRef{id: uint32(id), gen: e.gen, n: uint16(n)}
}

// keep records that the window holds r, a ref add returned, as a ref of its
// own rather than merged into one it already held.
func (t *pathTable) keep(r pathRef) {
	t.refs++
	t.entries[r.id].refs++
}

// remove takes back the page views that r, a ref the window held, recorded.
func (t *pathTable) remove(r pathRef) {
	t.changed = true
	id := int32(r.id)
	e := &t.entries[id]
	n := int64(r.n)
	t.refs--
	if r.gen == e.gen {
		e.own -= n
		e.refs--
	} else {
		t.stale--
	}
	c := t.buckets[e.bucket].count - n
	if c > 0 {
		t.setCount(id, c)
		return
	}
	// No second refers to the entry any more: free it.
	t.unlink(id)
	delete(t.index, e.path)
	e.path = ""
	e.own = 0
	if e.visitors != 0 { // a pair outlived the path's views: make it stale
		t.foldedVisitors += e.visitors
		e.visitors = 0
		e.gen++
	}
	t.free = append(t.free, id)
}

// setCount moves entry id to the bucket of count c > 0.
func (t *pathTable) setCount(id int32, c int64) {
	b := t.entries[id].bucket
	if t.buckets[b].count == c {
		return
	}
	// Find the target while b still exists; it is then never b itself.
	to := t.bucketFor(b, c)
	t.unlink(id)
	t.link(id, to)
}

// bucketFor returns the bucket of count c, creating it, searching from the
// bucket at; at is nilID only when there are no buckets.
func (t *pathTable) bucketFor(at int32, c int64) int32 {
	if at == nilID {
		return t.newBucket(c, nilID, nilID)
	}
	bs := t.buckets
	if bs[at].count < c {
		for nx := bs[at].next; nx != nilID && bs[nx].count <= c; nx = bs[nx].next {
			at = nx
		}
		if bs[at].count == c {
			return at
		}
		return t.newBucket(c, at, bs[at].next)
	}
	for pv := bs[at].prev; pv != nilID && bs[pv].count >= c; pv = bs[pv].prev {
		at = pv
	}
	if bs[at].count == c {
		return at
	}
	return t.newBucket(c, bs[at].prev, at)
}

// newBucket inserts an empty bucket of count c between prev and next.
func (t *pathTable) newBucket(c int64, prev, next int32) int32 {
	var b int32
	if k := len(t.freeB); k > 0 {
		b = t.freeB[k-1]
		t.freeB = t.freeB[:k-1]
	} else {
		b = int32(len(t.buckets))
		t.buckets = append(t.buckets, countBucket{})
	}
	t.buckets[b] = countBucket{count: c, head: nilID, prev: prev, next: next}
	if prev == nilID {
		t.minB = b
	} else {
		t.buckets[prev].next = b
	}
	if next == nilID {
		t.maxB = b
	} else {
		t.buckets[next].prev = b
	}
	return b
}

// link puts entry id at the head of bucket b.
func (t *pathTable) link(id, b int32) {
	e := &t.entries[id]
	e.bucket, e.prev, e.next = b, nilID, t.buckets[b].head
	if e.next != nilID {
		t.entries[e.next].prev = id
	}
	t.buckets[b].head = id
}

// unlink takes entry id out of its bucket, and frees the bucket if that
// leaves it empty.
func (t *pathTable) unlink(id int32) {
	e := &t.entries[id]
	b := e.bucket
	if e.prev != nilID {
		t.entries[e.prev].next = e.next
	} else {
		t.buckets[b].head = e.next
	}
	if e.next != nilID {
		t.entries[e.next].prev = e.prev
	}
	e.bucket, e.prev, e.next = nilID, nilID, nilID
	if t.buckets[b].head != nilID {
		return
	}
	bk := t.buckets[b]
	if bk.prev == nilID {
		t.minB = bk.next
	} else {
		t.buckets[bk.prev].next = bk.next
	}
	if bk.next == nilID {
		t.maxB = bk.prev
	} else {
		t.buckets[bk.next].prev = bk.prev
	}
	t.freeB = append(t.freeB, b)
}

// top returns up to k paths with the largest counts, by own page views then
// path. Paths whose own views have all left the window are skipped. The cost
// is O(k log k), whatever the number of paths.
func (t *pathTable) top(k int) []logtally.PageCount {
	out := make([]logtally.PageCount, 0, min(k, len(t.index)))
	for b := t.maxB; b != nilID && len(out) < k; b = t.buckets[b].prev {
		for id := t.buckets[b].head; id != nilID && len(out) < k; id = t.entries[id].next {
			if e := &t.entries[id]; e.own > 0 {
				out = append(out, logtally.PageCount{Path: e.path, PageViews: e.own})
			}
		}
	}
	slices.SortFunc(out, func(a, b logtally.PageCount) int {
		if c := cmp.Compare(b.PageViews, a.PageViews); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return out
}
