package storage

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/axiomhq/hyperloglog"
)

// union estimates the distinct visitors of many stored sketches: a step of
// a series merges its minutes'.
//
// Merging the sketches themselves (hyperloglog.Sketch.Merge) re-sorts and
// rewrites the merged sparse list once per sketch merged, which made a
// one-day series at a five-minute step cost 180 ms and 40 MB. A sparse
// sketch is a set of keys, and the library's own Merge yields the union of
// the keys, so union reads the keys straight from each sketch's binary
// form (whose layout hyperloglog.Sketch.UnmarshalBinary documents), and
// builds one sketch of the union, merging the sketches' sorted lists: the
// estimate is the one Merge gives (TestUnionMatchesMerge).
// A dense sketch, which only a minute of more than about 16,000
// distinct visitors has, is decoded and merged as before.
type union struct {
	keys  []uint32            // keys of the sparse sketches' lists, sorted, distinct
	loose []uint32            // keys of their tmp sets, in no order
	run   []uint32            // the keys of one list, or of the tmp sets, sorted
	spare []uint32            // where merge writes
	dense *hyperloglog.Sketch // the dense sketches added, merged; nil if none
	any   bool                // a sketch was added
	buf   []byte              // the union's binary form, reused
}

// hllPrecision is the precision of every stored sketch (hyperloglog.New14).
const hllPrecision = 14

// add adds a stored sketch in its binary form. Only the keys are kept: b
// may be reused once add returns.
func (u *union) add(b []byte) error {
	u.any = true
	if !isSparse(b) {
		return u.addDense(b)
	}
	var err error
	if u.loose, u.run, err = sparseKeys(b, u.loose, u.run[:0]); err != nil {
		return err
	}
	// The list is sorted: merging it costs a pass, where sorting the
	// union at the end cost most of a series.
	u.merge()
	return nil
}

// addSet adds the sketch that a minute's visitor set stands for (see
// record.set), dense if dense: the keys of its visitors, or its dense
// sketch, as the sketch's binary form would add them (see setSketch). The
// set is whole hashes; it may be reused once addSet returns.
func (u *union) addSet(set []byte, dense bool) {
	u.any = true
	if dense {
		// Into the union's dense sketch at once: a register's maximum over
		// the sets' sketches is its maximum over their hashes, and a
		// sketch a set would not be made and merged.
		if u.dense == nil {
			u.dense = hyperloglog.NewNoSparse()
		}
		for i := 0; i+8 <= len(set); i += 8 {
			u.dense.InsertHash(binary.BigEndian.Uint64(set[i:]))
		}
		return
	}
	// The hashes are sorted, and so are their keys but for the few whose
	// 11 bits under the top 14 are zero (one in 2,048), which carry the
	// rank of their first bit after the top 25 and go with the tmp sets'
	// keys: the set merges in one pass, as a sketch's sorted list does.
	u.run = u.run[:0]
	for i := 0; i+8 <= len(set); i += 8 {
		k := sparseKey(binary.BigEndian.Uint64(set[i:]))
		switch n := len(u.run); {
		case k&1 != 0:
			u.loose = append(u.loose, k)
		case n == 0 || u.run[n-1] != k:
			u.run = append(u.run, k)
		}
	}
	u.merge()
}

// isSparse reports whether b is the binary form of a sparse sketch of
// precision hllPrecision.
func isSparse(b []byte) bool {
	return len(b) >= 8 && (b[0] == 1 || b[0] == 2) && b[1] == hllPrecision && b[3] == 1
}

// sparseKeys appends the keys of a sparse sketch's binary form b (see
// isSparse) to loose, those of its tmp set, in no order, and to list, those
// of its compressed list, sorted and distinct.
func sparseKeys(b []byte, loose, list []uint32) ([]uint32, []uint32, error) {
	// A tmp set of n keys, then a compressed list: count, last, size, and a
	// stream of varint deltas between sorted keys.
	n := uint64(binary.BigEndian.Uint32(b[4:8]))
	b = b[8:]
	if uint64(len(b)) < 4*n+12 {
		return loose, list, fmt.Errorf("sketch: short: %w", ErrCorrupt)
	}
	for i := range n {
		loose = append(loose, binary.BigEndian.Uint32(b[4*i:]))
	}
	b = b[4*n:]
	count, size := binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[8:12])
	stream := b[12:]
	if uint64(len(stream)) != uint64(size) {
		return loose, list, fmt.Errorf("sketch: list size: %w", ErrCorrupt)
	}
	from := len(list)
	var key uint32
	for i := uint32(0); i < count; i++ {
		delta, n := binary.Uvarint(stream)
		if n <= 0 || delta > 1<<32-1 || (i > 0 && delta == 0) {
			return loose, list, fmt.Errorf("sketch: list: %w", ErrCorrupt)
		}
		stream = stream[n:]
		key += uint32(delta)
		list = append(list, key)
	}
	if len(stream) != 0 {
		return loose, list, fmt.Errorf("sketch: list trailing bytes: %w", ErrCorrupt)
	}
	if !slices.IsSorted(list[from:]) {
		return loose, list, fmt.Errorf("sketch: list out of order: %w", ErrCorrupt)
	}
	return loose, list, nil
}

// merge merges the sorted u.run into u.keys, through u.spare: the three
// buffers are reused from one step to the next.
func (u *union) merge() {
	a, b := u.keys, u.run
	out := mergeInto(slices.Grow(u.spare[:0], len(a)+len(b)), a, b)
	u.keys, u.spare = out, a[:0]
}

// addDense merges a sketch that is not sparse, decoding it.
func (u *union) addDense(b []byte) error {
	sk := hyperloglog.New14()
	if err := sk.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("sketch: %v: %w", err, ErrCorrupt)
	}
	if u.dense == nil {
		u.dense = sk
		return nil
	}
	if err := u.dense.Merge(sk); err != nil {
		return fmt.Errorf("sketch: %v: %w", err, ErrCorrupt)
	}
	return nil
}

// estimate returns the estimated distinct visitors of the sketches added,
// and whether any was, and empties u.
func (u *union) estimate() (n int64, ok bool, err error) {
	defer u.reset()
	if !u.any {
		return 0, false, nil
	}
	slices.Sort(u.loose)
	u.run = append(u.run[:0], slices.Compact(u.loose)...)
	u.merge()
	// One sparse sketch holding the union as its sorted list; the library
	// validates every key as it decodes it.
	b := appendSparse(u.buf[:0], u.keys)
	u.buf = b
	sk := hyperloglog.New14()
	if err := sk.UnmarshalBinary(b); err != nil {
		return 0, false, fmt.Errorf("sketch: %v: %w", err, ErrCorrupt)
	}
	if u.dense != nil {
		if err := sk.Merge(u.dense); err != nil {
			return 0, false, fmt.Errorf("sketch: %v: %w", err, ErrCorrupt)
		}
	}
	return int64(sk.Estimate()), true, nil
}

func (u *union) reset() {
	u.keys, u.loose, u.dense, u.any = u.keys[:0], u.loose[:0], nil, false
}

// appendSparse appends the binary form of a sparse sketch whose keys are
// keys, sorted and distinct, and whose tmp set is empty.
func appendSparse(b []byte, keys []uint32) []byte {
	b = append(b, 2, hllPrecision, 0, 1, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	last := uint32(0)
	if len(keys) > 0 {
		last = keys[len(keys)-1]
	}
	b = binary.BigEndian.AppendUint32(b, last)
	sizeAt := len(b)
	b = append(b, 0, 0, 0, 0)
	prev := uint32(0)
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(k-prev))
		prev = k
	}
	binary.BigEndian.PutUint32(b[sizeAt:], uint32(len(b)-sizeAt-4))
	return b
}
