package storage

import (
	"math/bits"
	"slices"

	"github.com/logtally/logtally/tally"
)

// prepare sorts a delta's visitors and drops repeats. It changes nothing a
// commit stores, so that a batch whose commit failed can be committed again.
func prepare(c *tally.Delta, sc *scratch) {
	sortHashes(c.Visitors, sc)
	c.Visitors = slices.Compact(c.Visitors)
}

// sortHashes sorts visitor hashes. They are uniform, so one pass that
// spreads them by their top bits into buckets of about four leaves little
// for a comparison sort: it is a few times faster than sorting thousands of
// them by comparison alone, as busy minutes need. Skewed input only makes
// the buckets, and their sorting, larger.
func sortHashes(v []uint64, sc *scratch) {
	if len(v) < 256 {
		slices.Sort(v)
		return
	}
	width := bits.Len(uint(len(v))) - 2
	shift := 64 - width
	if cap(sc.buckets) < 1<<width+1 {
		sc.buckets = make([]int32, 1<<width+1)
	}
	ends := sc.buckets[:1<<width+1]
	clear(ends)
	for _, h := range v {
		ends[h>>shift+1]++
	}
	for i := 1; i < len(ends); i++ {
		ends[i] += ends[i-1]
	}
	if cap(sc.hashes) < len(v) {
		sc.hashes = make([]uint64, len(v))
	}
	tmp := sc.hashes[:len(v)]
	for _, h := range v { // ends[b] moves from the start of bucket b to its end
		b := h >> shift
		tmp[ends[b]] = h
		ends[b]++
	}
	start := int32(0)
	for _, end := range ends[:len(ends)-1] {
		if end-start > 1 {
			slices.Sort(tmp[start:end])
		}
		start = end
	}
	copy(v, tmp)
}
