package storage

import (
	"math/bits"
	"slices"

	"github.com/axiomhq/hyperloglog"
	"github.com/logtally/logtally/tally"
)

// An hour's or a day's sketch is sparse while it holds fewer than
// denseFrom keys, and dense from then on. An hour of a small site holds a
// few hundred visitors: sparse, its sketch is a few hundred bytes, where a
// dense one is 16 KiB that every commit reaching the hour reads, merges,
// estimates over 16,384 registers and writes again to overflow pages; with
// a hundred sites those were most of the file and of a commit.
//
// The form is a function of the visitors alone, whatever the commits they
// came in, so that an hour's estimate does not depend on how its lines
// were batched: a commit gathers an hour's visitors, and builds its sketch
// from their keys, dense if they are denseFrom or more (seal); and after
// any merge, a sparse sketch that counts denseFrom keys or more turns dense
// (settle). A sparse sketch's estimate is its count of keys, below 8,192.

// sealFrom is how many visitors, repeats included, a prepared hour or day
// gathers before its sketch is built: an hour of a busy site is dense after
// its first minutes, and inserted into directly from then on.
const sealFrom = 2 * denseFrom

// rollup adds a minute's delta to the hour or day record it belongs to.
func rollup[K comparable](m map[K]*record, k K, d *tally.Delta) {
	r := m[k]
	if r == nil {
		r = &record{}
		m[k] = r
	}
	r.add(d)
	if r.dense {
		for _, v := range d.Visitors {
			r.hll.InsertHash(v)
		}
		return
	}
	r.keys = append(r.keys, d.Visitors...)
	if len(r.keys) >= sealFrom {
		r.seal()
	}
}

// seal builds the sketch of the visitors a prepared rollup gathered, and
// merges it into the one it has.
func (r *record) seal() {
	if len(r.keys) > 0 {
		sk, dense := sketchOf(r.keys)
		if r.hll == nil {
			r.hll = sk
		} else {
			r.hll.Merge(sk)
		}
		r.dense = r.dense || dense
		r.keys = nil
	}
	r.settle()
}

// seal seals the records of prepared hours and days.
func (r rollups) seal() {
	for _, h := range r.hours {
		h.seal()
	}
	for _, d := range r.days {
		d.seal()
	}
}

// settle turns a sparse rollup sketch that counts denseFrom keys or more
// dense.
func (r *record) settle() {
	if r.hll == nil || r.dense || r.hll.Estimate() < denseFrom {
		return
	}
	dense := hyperloglog.NewNoSparse()
	dense.Merge(r.hll)
	r.hll, r.dense = dense, true
}

// sketchOf returns a sketch of visitor hashes, dense if their keys number
// denseFrom or more. A sparse one is built from its binary form: inserting
// the hashes one by one would re-sort its list every 164.
func sketchOf(hashes []uint64) (sk *hyperloglog.Sketch, dense bool) {
	keys := make([]uint32, len(hashes))
	for i, h := range hashes {
		keys[i] = sparseKey(h)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) >= denseFrom {
		sk = hyperloglog.NewNoSparse()
		for _, h := range hashes {
			sk.InsertHash(h)
		}
		return sk, true
	}
	sk = hyperloglog.New14()
	if err := sk.UnmarshalBinary(appendSparse(nil, keys)); err != nil {
		// Only if sparseKey were not the library's: the slow way.
		sk = hyperloglog.New14()
		for _, h := range hashes {
			sk.InsertHash(h)
		}
	}
	return sk, false
}

// sparsePrecision is the precision of a sparse sketch's keys: the
// hyperloglog binary form's version 2 pins it to 25.
const sparsePrecision = 25

// sparseKey is the key of a hash in a sparse sketch of precision
// hllPrecision, as hyperloglog's InsertHash computes it (encodeHash):
// the top 25 bits of the hash and a flag, and, when the 11 bits under the
// top 14 are zero, the rank of the first set bit below the top 25
// (TestSparseKeyMatchesInsert).
func sparseKey(x uint64) uint32 {
	const p, pp = hllPrecision, sparsePrecision
	idx := uint32(x >> (64 - pp))
	if (x>>(64-pp))&(1<<(pp-p)-1) == 0 {
		zeros := bits.LeadingZeros64(x<<pp|(1<<pp-1)) + 1
		return idx<<7 | uint32(zeros<<1) | 1
	}
	return idx << 1
}
