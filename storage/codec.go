package storage

import (
	"encoding/binary"
	"math/bits"

	"github.com/logtally/logtally"
)

// A path list is how every stored value lays out paths with counts: a
// minute's top pages, a live-window second's paths, a path log value and a
// path shard. It is uvarint n, then n times (uvarint length, path, uvarint
// count). It is encoded and decoded here and nowhere else.

// appendPathList appends list as a path list.
func appendPathList(b []byte, list []logtally.PageCount) []byte {
	b = binary.AppendUvarint(b, uint64(len(list)))
	for _, pc := range list {
		b = appendEntry(b, pc.Path, pc.PageViews)
	}
	return b
}

// pathListSize is the encoded size of list.
func pathListSize(list []logtally.PageCount) int {
	size := uvarintLen(uint64(len(list)))
	for _, pc := range list {
		size += entrySize(pc.Path, pc.PageViews)
	}
	return size
}

// appendEntry appends one entry of a path list.
func appendEntry[P string | []byte](b []byte, path P, n int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(path)))
	b = append(b, path...)
	return binary.AppendUvarint(b, uint64(n))
}

// entrySize is the encoded size of one entry of a path list.
func entrySize(path string, n int64) int {
	return uvarintLen(uint64(len(path))) + len(path) + uvarintLen(uint64(n))
}

// uvarintLen is the length of v as a uvarint.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// decoder reads the fields of a stored value, remembering the first error:
// a caller reads every field and checks err once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = ErrCorrupt
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// listLen reads the length of a path list. An entry takes two bytes at
// least, so a length past the bytes left is corrupt, and allocating for it
// is bounded by the value's size.
func (d *decoder) listLen() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = ErrCorrupt
		return 0
	}
	return int(n)
}

// entry reads one entry of a path list. path aliases the value.
func (d *decoder) entry() (path []byte, n int64) {
	path = d.bytes()
	return path, int64(d.uvarint())
}

// pathList reads a path list, calling fn for each entry until an error.
// path is only valid during the call.
func (d *decoder) pathList(fn func(path []byte, n int64)) { d.entries(d.listLen(), fn) }

// entries reads the n entries of a path list whose length listLen read.
func (d *decoder) entries(n int, fn func(path []byte, n int64)) {
	for range n {
		p, c := d.entry()
		if d.err != nil {
			return
		}
		fn(p, c)
	}
}

// pageCounts reads a path list into page counts that do not alias the value.
func (d *decoder) pageCounts() []logtally.PageCount {
	n := d.listLen()
	out := make([]logtally.PageCount, 0, n)
	d.entries(n, func(p []byte, c int64) {
		out = append(out, logtally.PageCount{Path: string(p), PageViews: c})
	})
	return out
}
