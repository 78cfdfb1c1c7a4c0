package ingest

import (
	"bytes"
	"encoding/binary"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// A batch numbers each path it counts page views of (tally.Batch.PathNumber)
// by a map keyed by the path. Looked up for every page view on the one
// goroutine that applies the hits, that was a tenth of a replay's CPU: not
// the hashing, but reading each path, which lies in a chunk another core
// parsed, from memory. So the workers that parse a chunk list its page
// views' distinct paths, a few hundred in thousands of lines, while the
// lines are in their cache, and the applying goroutine numbers each of
// those once (NumberPaths) and adds the hits by number (AddTo).

// numbering is a chunk's page-view paths, each once, and the number each
// has in the batch NumberPaths numbered them in.
type numbering struct {
	pathOf   []int32  // by hit: its path's index in distinct, or -1 (not a page view, or see pathIndex.of)
	distinct [][]byte // aliasing the chunk's data or Result.paths
	numbers  []int32  // by index in distinct, in batch
	batch    *tally.Batch
}

func (n *numbering) reset() {
	n.pathOf, n.distinct, n.numbers, n.batch = n.pathOf[:0], n.distinct[:0], n.numbers[:0], nil
}

// pathIndex finds a path among a chunk's distinct paths by its hash, in
// an open-addressed table: a Go map keyed by the path's bytes cost a
// parse worker more than the applying goroutine saves. It belongs to one
// parsing goroutine.
type pathIndex struct {
	slots []pathSlot // a power of two of them, at most half used
	used  int
}

// pathSlot is a slot of a pathIndex: i is one more than the index of the
// path of hash h in numbering.distinct; 0 for an empty slot.
type pathSlot struct {
	h uint64
	i int32
}

// minPathSlots is how many slots a pathIndex starts with: a chunk of
// ChunkSize holds a few thousand lines, rarely more than a few hundred
// paths.
const minPathSlots = 1024

// reset forgets the paths of the last chunk.
func (p *pathIndex) reset() {
	if p.slots == nil {
		p.slots = make([]pathSlot, minPathSlots)
	}
	if p.used > 0 {
		clear(p.slots)
		p.used = 0
	}
}

// of returns the index of h's path among r's distinct paths, adding it if
// it is new, or -1 if h is not a page view. Two paths of one hash are
// told apart by their bytes: the second is given -1, so that the batch
// numbers it by its path, as if no worker had.
func (p *pathIndex) of(r *Result, h *logtally.Hit) int32 {
	if !h.PageView {
		return -1
	}
	k := pathHash(h.Path)
	mask := uint64(len(p.slots) - 1)
	for s := k & mask; ; s = (s + 1) & mask {
		sl := &p.slots[s]
		if sl.i == 0 {
			i := int32(len(r.distinct))
			r.distinct = append(r.distinct, h.Path)
			*sl = pathSlot{k, i + 1}
			if p.used++; 2*p.used > len(p.slots) {
				p.grow()
			}
			return i
		}
		if sl.h == k {
			if i := sl.i - 1; bytes.Equal(r.distinct[i], h.Path) {
				return i
			}
			return -1
		}
	}
}

// grow doubles the slots.
func (p *pathIndex) grow() {
	old := p.slots
	p.slots = make([]pathSlot, 2*len(old))
	mask := uint64(len(p.slots) - 1)
	for _, sl := range old {
		if sl.i == 0 {
			continue
		}
		s := sl.h & mask
		for p.slots[s].i != 0 {
			s = (s + 1) & mask
		}
		p.slots[s] = sl
	}
}

// pathHash is a cheap hash of a path, eight bytes at a time: a path is a
// few words long, and a collision costs only a fallback (see of).
func pathHash(b []byte) uint64 {
	const m1, m2 = 0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9
	h := uint64(len(b)) * m1
	for ; len(b) >= 8; b = b[8:] {
		h = (h ^ binary.LittleEndian.Uint64(b)) * m2
		h ^= h >> 31
	}
	var tail uint64
	for i, c := range b {
		tail |= uint64(c) << (8 * i)
	}
	h = (h ^ tail) * m2
	return h ^ h>>29
}

// NumberPaths numbers the page views' paths of r in b, each once
// (tally.Batch.PathNumber), for AddTo.
func (r *Result) NumberPaths(b *tally.Batch) {
	r.numbers = r.numbers[:0]
	for _, path := range r.distinct {
		r.numbers = append(r.numbers, b.PathNumber(path))
	}
	r.batch = b
}

// AddTo adds hit i of r to b, as tally.Batch.Add does; if r's paths were
// numbered in b (NumberPaths), by its path's number, without reading its
// path.
func (r *Result) AddTo(b *tally.Batch, i int, live bool) {
	h := &r.Hits[i]
	if j := r.pathOf[i]; j >= 0 && b == r.batch {
		b.AddNumbered(h, r.numbers[j], live)
		return
	}
	b.Add(h, live)
}

// A hit is added to the all-sites view's batch and to its site's, and each
// numbers its paths its own way. The router knows each hit's site, and
// the chunk's paths were numbered in the all-sites batch already
// (NumberPaths): a site keeps, by that number, the number the path has in
// its own batch, so that a site's page view costs an index, not a lookup
// of its path (siteNumbers).

// siteNumbers is a site's path numbers by the all-sites batch's: fromAll[n]
// is one more than the number, in the site's batch, of the path numbered n
// in the all-sites batch; 0 when not known yet. It holds for one numbering
// of each batch (tally.Batch.Numbering).
type siteNumbers struct {
	fromAll   []int32
	all, site uint64 // the numberings it holds for
}

// maxSiteNumbers bounds a site's siteNumbers: a path the all-sites batch
// numbered past it is looked up by its bytes. A site of a flood of random
// paths then keeps at most 4 KiB.
const maxSiteNumbers = 1024

// of returns the number in site of the path whose number in all is n.
func (sn *siteNumbers) of(n int32, all, site *tally.Batch, path []byte) int32 {
	if sn.all != all.Numbering() || sn.site != site.Numbering() {
		clear(sn.fromAll)
		sn.all, sn.site = all.Numbering(), site.Numbering()
	}
	if int(n) < len(sn.fromAll) {
		if id := sn.fromAll[n]; id > 0 {
			return id - 1
		}
	}
	id := site.PathNumber(path)
	if n < maxSiteNumbers {
		if int(n) >= len(sn.fromAll) {
			size := min(max(int(n)+1, 2*len(sn.fromAll), 64), maxSiteNumbers)
			sn.fromAll = append(sn.fromAll, make([]int32, size-len(sn.fromAll))...)
		}
		sn.fromAll[n] = id + 1
	}
	return id
}

// addToSite adds hit i of r to its site s's batch, as tally.Batch.Add does: if r's paths were numbered
// (NumberPaths), by its path's number in the all-sites batch, without
// reading its path (see siteNumbers).
func (r *Result) addToSite(s *Site, i int, live bool) {
	h := &r.Hits[i]
	if j := r.pathOf[i]; j >= 0 && r.batch != nil {
		s.Batch.AddNumbered(h, s.numbers.of(r.numbers[j], r.batch, s.Batch, r.distinct[j]), live)
		return
	}
	s.Batch.Add(h, live)
}
