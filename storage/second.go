package storage

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// second is the stored state of one second of the live window: enough to put
// it back into a window exactly after a restart.
type second struct {
	Requests  int64
	PageViews int64
	Visitors  []uint64 // sorted, distinct
	Paths     map[string]int64
}

func (v *second) merge(d *counts) {
	v.Requests += d.requests
	v.PageViews += d.pageviews
	for h := range d.visitors {
		v.Visitors = append(v.Visitors, h)
	}
	slices.Sort(v.Visitors)
	v.Visitors = slices.Compact(v.Visitors)
	if v.Paths == nil {
		v.Paths = make(map[string]int64, len(d.paths))
	}
	for p, n := range d.paths {
		v.Paths[p] += n
	}
}

// encode: version; uvarint requests, page views; uvarint n, n x uint64
// visitor; uvarint n, n x (uvarint length, path, uvarint views), sorted.
func (v *second) encode() []byte {
	b := []byte{recordEncoding}
	b = binary.AppendUvarint(b, uint64(v.Requests))
	b = binary.AppendUvarint(b, uint64(v.PageViews))
	b = binary.AppendUvarint(b, uint64(len(v.Visitors)))
	for _, h := range v.Visitors {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	b = binary.AppendUvarint(b, uint64(len(v.Paths)))
	for _, p := range slices.Sorted(maps.Keys(v.Paths)) {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, uint64(v.Paths[p]))
	}
	return b
}

func (v *second) decode(b []byte) error {
	if len(b) == 0 || b[0] != recordEncoding {
		return fmt.Errorf("second version: %w", ErrCorrupt)
	}
	d := decoder{b: b[1:]}
	v.Requests, v.PageViews = int64(d.uvarint()), int64(d.uvarint())
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b))/8 {
		return fmt.Errorf("second visitors: %w", ErrCorrupt)
	}
	v.Visitors = make([]uint64, n)
	for i := range v.Visitors {
		v.Visitors[i] = binary.BigEndian.Uint64(d.b[8*i:])
	}
	d.b = d.b[8*n:]
	n = d.uvarint()
	if n > uint64(len(d.b)) {
		return fmt.Errorf("second paths: %w", ErrCorrupt)
	}
	v.Paths = make(map[string]int64, n)
	for range n {
		p := d.bytes()
		v.Paths[string(p)] = int64(d.uvarint())
	}
	if d.err != nil || len(d.b) != 0 {
		return fmt.Errorf("second: %w", ErrCorrupt)
	}
	return nil
}
