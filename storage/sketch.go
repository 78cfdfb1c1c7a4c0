package storage

import (
	"encoding/binary"
	"slices"

	"github.com/axiomhq/hyperloglog"
)

// A minute of fewer than denseFrom visitors keeps a sparse sketch: the
// sorted list of its visitors' sparse keys, delta- and varint-encoded.
// Inserted one by one (InsertHash), hyperloglog gathers the keys in a hash
// set and, every 164 of them, sorts the set and rewrites the whole list
// with it: a twentieth of a replay's CPU. A minute's visitors are at hand
// all at once, so minuteSketch computes their keys, sorts them once, and
// hands hyperloglog the encoded list, which it checks key by key as it
// reads it. The sketch is the one InsertHash builds: the same keys, in a
// list rather than partly in the set (TestSparseSketchIsInsertHash).

// Sparse encoding of hyperloglog v0.3 (sparse.go, compressed.go): the
// precision of New14, the sparse keys' precision, and the encoding's
// version.
const (
	sketchP       = 14
	sketchPP      = 25
	sketchVersion = 2
)

// minuteSketch returns the sparse sketch of visitors (fewer than
// denseFrom), built in buf (reused by the next call). It falls back to
// inserting them one by one where the list would be past what a sparse
// sketch holds, or if hyperloglog turns the encoding down.
func minuteSketch(visitors []uint64, buf *sketchBuf) *hyperloglog.Sketch {
	data, ok := minuteSketchData(visitors, buf)
	if !ok {
		return insertSketch(visitors)
	}
	sk := new(hyperloglog.Sketch)
	if err := sk.UnmarshalBinary(data); err != nil {
		return insertSketch(visitors)
	}
	return sk
}

// minuteSketchData returns the binary form of the sparse sketch of visitors
// (fewer than denseFrom), built in buf and valid until its next use: the
// bytes hyperloglog's MarshalBinary gives of minuteSketch's sketch
// (TestSparseSketchBytes), so that a minute stored new is encoded without
// a sketch made and marshalled. It is false where the list would be past
// what a sparse sketch holds.
func minuteSketchData(visitors []uint64, buf *sketchBuf) ([]byte, bool) {
	keys := buf.keys[:0]
	for _, v := range visitors {
		keys = append(keys, sparseKey(v))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	buf.keys = keys
	// Header: version, precision, no bias, sparse; an empty hash set.
	data := append(buf.data[:0], sketchVersion, sketchP, 0, 1, 0, 0, 0, 0)
	head := len(data)
	data = append(data, make([]byte, 12)...) // count, last, stream size
	var last uint32
	for _, k := range keys {
		data = binary.AppendUvarint(data, uint64(k-last))
		last = k
	}
	buf.data = data
	stream := len(data) - head - 12
	if stream > 1<<sketchP { // InsertHash would have made it dense
		return nil, false
	}
	binary.BigEndian.PutUint32(data[head:], uint32(len(keys)))
	binary.BigEndian.PutUint32(data[head+4:], last)
	binary.BigEndian.PutUint32(data[head+8:], uint32(stream))
	return data, true
}

// insertSketch is the sketch of visitors made one InsertHash at a time.
func insertSketch(visitors []uint64) *hyperloglog.Sketch {
	sk := hyperloglog.New14()
	for _, v := range visitors {
		sk.InsertHash(v)
	}
	return sk
}

// sketchBuf is minuteSketch's reusable memory.
type sketchBuf struct {
	keys []uint32
	data []byte
}

// denseSketch is the dense sketch of visitors.
func denseSketch(visitors []uint64) *hyperloglog.Sketch {
	sk := hyperloglog.NewNoSparse()
	for _, v := range visitors {
		sk.InsertHash(v)
	}
	return sk
}

// setSketch returns the binary form of the sketch of a minute's visitors,
// sorted and distinct, dense if dense: the bytes a commit of them all to a
// new minute stored before minutes kept their sets in place of their
// sketches (prepare's minuteSketchData, or insertSketch, below denseFrom;
// addSketch's dense sketch from it), so that a set compacted into its
// sketch is the minute it always was (TestCompactedSetIsTheSketch). The
// sparse form is built in buf, and valid until its next use.
func setSketch(visitors []uint64, dense bool, buf *sketchBuf) ([]byte, error) {
	if dense {
		return denseSketch(visitors).MarshalBinary()
	}
	if data, ok := minuteSketchData(visitors, buf); ok {
		return data, nil
	}
	return insertSketch(visitors).MarshalBinary()
}
