package window

import "slices"

// Compaction. A slot lists a visitor when the visitor's latest page view was
// in its second; a visitor seen again later is listed again, and its older
// entry goes stale. The same goes for the path refs of an entry that has
// changed path since (Space-Saving). Stale entries are what would make the
// lists grow with page views rather than with visitors and paths: a flood of
// ten million random paths would leave ten million refs, 8 bytes each.
//
// So once the stale entries are many (minStaleVisitors, minStaleRefs) and
// the lists have doubled since the last compaction, they are compacted: a
// stale visitor is dropped, and the stale refs of one entry within one block
// of a tenth of the window are merged into one ref at the block's first
// second. That ref still brings the entry's count down, up to a tenth of the
// window early; own counts, the ones pages report, only ever come from live
// refs and stay exact. The doubling keeps the work amortised O(1) per hit,
// and the lists within about twice: visitors and paths in the window, plus
// ten refs per path entry.
const (
	minStaleVisitors = 1 << 20 // 8 MB of stale entries
	minStaleRefs     = 1 << 12 // at least; MaxPaths by default
)

// compact drops the stale entries of the slots' visitor lists.
func (c *visitorCount) compact(slots []slot) {
	n := 0
	for i := range slots {
		s := &slots[i]
		kept := s.visitors[:0]
		for _, v := range s.visitors {
			if c.exact[v] == s.sec {
				kept = append(kept, v)
			}
		}
		s.visitors = shrink(kept)
		n += len(kept)
	}
	c.entries, c.after, c.stale = n, n, 0
}

// refCompaction is the bookkeeping of compactRefs.
type refCompaction struct {
	after    int // the table's refs after the last compaction
	minStale int // least stale refs worth a compaction
	// Scratch of compactRefs: each entry's stale views in the block, and
	// the entries that have some.
	merge   []int64
	touched []int32
}

// compactRefs merges the stale path refs of each entry, block by block.
func (w *Window) compactRefs() {
	t := w.paths
	if len(w.refs.merge) < len(t.entries) {
		w.refs.merge = make([]int64, len(t.entries))
	}
	for i := range t.entries {
		t.entries[i].refs = 0
	}
	t.stale = 0
	var first *slot
	flush := func() {
		for _, id := range w.refs.touched {
			e := &t.entries[id]
			for n := w.refs.merge[id]; n > 0; n -= maxRefViews {
				first.paths = append(first.paths, pathRef{id: uint32(id), gen: e.gen - 1, n: uint16(min(n, maxRefViews))})
				t.stale++
			}
			w.refs.merge[id] = 0
		}
		w.refs.touched = w.refs.touched[:0]
	}
	block := max(w.length/10, 1)
	current := int64(-1)
	for sec := w.Start(); sec <= w.now; sec++ {
		s := w.slot(sec)
		if b := (sec - int64(mod(sec, block))) / block; b != current || first == nil {
			if first != nil {
				flush()
			}
			current, first = b, s
		}
		kept := s.paths[:0]
		for _, r := range s.paths {
			if e := &t.entries[r.id]; r.gen == e.gen {
				kept = append(kept, r)
				e.refs++
				continue
			}
			if w.refs.merge[r.id] == 0 {
				w.refs.touched = append(w.refs.touched, int32(r.id))
			}
			w.refs.merge[r.id] += int64(r.n)
		}
		s.paths = kept
	}
	flush()
	t.refs = 0
	for i := range w.slots {
		s := &w.slots[i]
		s.paths = shrink(s.paths)
		t.refs += len(s.paths)
	}
	w.refs.after = t.refs
}

// shrink returns s in an array of its own size when most of its array is
// unused, so that a second that once held many entries does not keep them.
func shrink[T any](s []T) []T {
	if cap(s) <= 2*len(s)+64 {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
