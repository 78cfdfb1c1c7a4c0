package storage

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/axiomhq/hyperloglog"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
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
// were batched: a sparse sketch is its set of keys, and it turns dense
// once the set holds denseFrom keys. A commit handles a sparse rollup as
// that set, sorted (record.sparse): it gathers a prepared hour's visitors,
// and turns them into keys once they are many (seal); it merges sets of
// keys in one pass, where the library's Merge re-sorts the list every 164
// keys; and it builds the sketch only to store it.

// sealFrom is how many visitors, repeats included, a prepared hour or day
// gathers before it turns them into keys: an hour of a busy site is dense
// after its first minutes, and inserted into directly from then on.
const sealFrom = 2 * denseFrom

// rollupOf returns the record of k in m, the hours or days a commit
// prepares, made if m has none.
func rollupOf[K comparable](m map[K]*record, k K) *record {
	r := m[k]
	if r == nil {
		r = &record{}
		m[k] = r
	}
	return r
}

// gather adds a minute's delta to r, the hour or day it belongs to.
func (r *record) gather(d *tally.Delta) {
	r.add(d)
	if r.dense {
		for _, v := range d.Visitors {
			r.hll.InsertHash(v)
		}
		return
	}
	for _, v := range d.Visitors {
		r.keys = append(r.keys, sparseKey(v))
	}
	if len(r.keys) >= sealFrom {
		r.seal()
	}
}

// seal turns the visitors a prepared rollup gathered into keys of its
// sketch.
func (r *record) seal() {
	if len(r.keys) == 0 {
		return
	}
	// The keys are the record's own: sorted in place, and, the first a
	// sparse record gathers, its set with no copy.
	slices.Sort(r.keys)
	keys := slices.Compact(r.keys)
	r.keys = nil
	if !r.dense && len(r.sparse) == 0 {
		r.sparse = keys
		keys = nil // addKeys turns it dense if it holds enough
	}
	r.addKeys(keys)
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

// addKeys adds sorted, distinct keys to a rollup's sketch.
func (r *record) addKeys(keys []uint32) {
	if !r.dense {
		r.sparse = mergeKeys(r.sparse, keys)
		if len(r.sparse) < denseFrom {
			return
		}
		keys, r.sparse = r.sparse, nil
		r.hll, r.dense = hyperloglog.NewNoSparse(), true
	}
	// Valid keys, ours or checked as they were read (rollupSketch).
	sk, _ := sparseSketch(keys)
	r.hll.Merge(sk)
}

// mergeKeys returns the union of sorted, distinct keys a and b, in a new
// slice unless b is empty: a prepared rollup's keys may be read by the
// commits of several sites (see withAlso).
func mergeKeys(a, b []uint32) []uint32 {
	if len(b) == 0 {
		return a
	}
	return mergeInto(make([]uint32, 0, len(a)+len(b)), a, b)
}

// mergeSketch adds the sketch of rollup o to r's.
func (r *record) mergeSketch(o *record) error {
	if !o.dense {
		r.addKeys(o.sparse)
		return nil
	}
	if !r.dense {
		sk, err := sparseSketch(r.sparse)
		if err != nil {
			return err
		}
		r.hll, r.sparse, r.dense = hyperloglog.NewNoSparse(), nil, true
		r.hll.Merge(sk)
	}
	return r.hll.Merge(o.hll)
}

// mergeRollup merges a delta record into the stored hour or day at key.
// Rollup visitors always come from the merged sketch.
func mergeRollup(b *bolt.Bucket, key []byte, d *record) error {
	var r record
	if v := b.Get(key); v != nil {
		if err := r.decodeRollup(v); err != nil {
			return err
		}
	}
	r.addTotals(d.Requests, d.PageViews, d.Bytes, d.Rejected, &d.Status)
	if err := r.mergeSketch(d); err != nil {
		return err
	}
	v, err := r.encodeRollup()
	if err != nil {
		return err
	}
	return b.Put(key, v)
}

// encodeRollup encodes a merged hour or day, its visitors its sketch's
// estimate. A sparse one is encoded from its keys, and counted as
// hyperloglog counts a sparse sketch, with no sketch made, read back and
// marshalled: each commit of many sites merges an hour and a day of each,
// and their sketches are mostly sparse (TestEncodeRollupIsTheSketch).
func (r *record) encodeRollup() ([]byte, error) {
	r.Approximate = true
	if !r.dense && len(r.sparse) > 0 {
		if data, ok := sparseData(r.sparse); ok {
			r.Visitors = sparseEstimate(len(r.sparse))
			return r.encodeSketch(data), nil
		}
	}
	if err := r.sketchKeys(); err != nil {
		return nil, err
	}
	if r.hll != nil {
		r.Visitors = int64(r.hll.Estimate())
	}
	return r.encode()
}

// sparseData returns the binary form of the sparse sketch whose keys are
// keys, sorted and distinct, as hyperloglog marshals it once it has read
// it back. It is false where hyperloglog would not keep the sketch sparse
// (its list past 2^14 bytes) or would refuse a key.
func sparseData(keys []uint32) ([]byte, bool) {
	for _, k := range keys {
		if !validSparseKey(k) {
			return nil, false
		}
	}
	data := appendSparse(nil, keys)
	const head = 20 // header, empty tmp set, count, last and size
	return data, len(data)-head <= 1<<hllPrecision
}

// validSparseKey reports whether hyperloglog reads k as a key of a sparse
// sketch of precision hllPrecision: the rank a flagged key (see sparseKey)
// holds is at most 64-14+1 once 25-14 is added to it.
func validSparseKey(k uint32) bool {
	return k&1 == 0 || (k>>1)&63+sparsePrecision-hllPrecision <= 64-hllPrecision+1
}

// sparseEstimate is hyperloglog's estimate of a sparse sketch of n keys:
// linear counting over the 2^25 registers the keys index.
func sparseEstimate(n int) int64 {
	const m = 1 << sparsePrecision
	v := uint32(m - min(n, m-1))
	return int64(uint64(float64(m) * math.Log(float64(m)/float64(v))))
}

// sketchKeys makes a sparse rollup's keys its sketch, to store it.
func (r *record) sketchKeys() error {
	if r.dense || len(r.sparse) == 0 {
		return nil
	}
	var err error
	r.hll, err = sparseSketch(r.sparse)
	return err
}

// decodeRollup reads a stored hour or day, a sparse sketch as its keys.
func (r *record) decodeRollup(v []byte) error {
	sk, err := r.decodeFields(v, true)
	switch {
	case err != nil:
		return err
	case r.set != nil:
		return errRollupSet
	case len(sk) == 0:
		return nil
	case !isSparse(sk):
		r.hll, r.dense = hyperloglog.New14(), true
		if err := r.hll.UnmarshalBinary(sk); err != nil {
			return fmt.Errorf("record sketch: %v: %w", err, ErrCorrupt)
		}
		return nil
	}
	loose, list, err := sparseKeys(sk, nil, nil)
	if err != nil {
		return err
	}
	slices.Sort(loose)
	r.sparse = mergeKeys(list, slices.Compact(loose))
	if len(r.sparse) >= denseFrom { // stored sparse by a program that kept it so
		r.addKeys(nil)
	}
	return nil
}

// sparseSketch returns the sparse sketch whose keys are keys, sorted and
// distinct, checking them.
func sparseSketch(keys []uint32) (*hyperloglog.Sketch, error) {
	sk := hyperloglog.New14()
	if err := sk.UnmarshalBinary(appendSparse(nil, keys)); err != nil {
		return nil, fmt.Errorf("sketch: %v: %w", err, ErrCorrupt)
	}
	return sk, nil
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
