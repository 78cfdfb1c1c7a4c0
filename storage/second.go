package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// MaxSecondPaths is how many paths a stored second of the live window keeps:
// the most viewed, with their page views. A second's page views in all are
// always kept, so that a restart restores requests, page views and visitors
// exactly; the path counts it restores are exact for every path that was
// among the MaxSecondPaths most viewed of each second it was viewed in,
// which is every path while a site serves fewer distinct paths a second.
// Without the cap, a flood of random paths would store every one of them
// for as long as the window lasts.
const MaxSecondPaths = 1000

// second is the stored state of one second of the live window: enough to put
// it back into a window exactly after a restart (see MaxSecondPaths).
type second struct {
	Requests  int64
	PageViews int64
	Visitors  []uint64 // sorted, distinct
	Paths     map[string]int64
	// Pairs, for a named counter's site, are each path's visitors in the
	// second (distinct), so that a restart restores distinct visitors per
	// key; nil for other sites.
	Pairs map[string][]uint64
}

// merge adds a delta (its visitors sorted and distinct, in visitors), its
// page views per path and its pairs to v.
func (v *second) merge(d *tally.Delta, visitors []uint64, paths []logtally.PageCount, pairs map[string][]uint64) {
	v.Requests += d.Requests
	v.PageViews += d.PageViews
	v.Visitors = mergeSorted(v.Visitors, visitors)
	for p, vs := range pairs {
		if v.Pairs == nil {
			v.Pairs = make(map[string][]uint64, len(pairs))
		}
		v.Pairs[p] = mergeSorted(v.Pairs[p], vs)
	}
	if v.Paths == nil {
		v.Paths = make(map[string]int64, len(paths))
	}
	for _, pc := range paths {
		v.Paths[pc.Path] += pc.PageViews
	}
}

func (v *second) encode(a *arena) []byte {
	paths := make([]logtally.PageCount, 0, len(v.Paths))
	for p, n := range v.Paths {
		paths = append(paths, logtally.PageCount{Path: p, PageViews: n})
	}
	return encodeSecond(a, v.Requests, v.PageViews, v.Visitors, paths, v.Pairs)
}

// encodeSecond lays a second out as: version; uvarint requests, page views;
// uvarint n, n x uint64 visitor (sorted, distinct); uvarint n, n x (uvarint
// length, path, uvarint views), paths distinct and in no particular order;
// and only when there are pairs (a named counter's site): uvarint n, n x
// (uvarint length, path, uvarint k, k x uint64 visitor, sorted).
// Sorting the paths of every second would cost more than the rest of its
// encoding, and nothing reads them in order.
func encodeSecond(a *arena, requests, pageviews int64, visitors []uint64, paths []logtally.PageCount,
	pairs map[string][]uint64) []byte {
	if len(paths) > MaxSecondPaths {
		var dropped int64
		paths = selectTop(paths, MaxSecondPaths, &dropped)
	}
	size := 1 + 3*binary.MaxVarintLen64 + 8*len(visitors) + pathListSize(paths)
	if len(pairs) > 0 {
		size += binary.MaxVarintLen64
		for p, vs := range pairs {
			size += 2*binary.MaxVarintLen64 + len(p) + 8*len(vs)
		}
	}
	b := a.alloc(size)
	b = append(b, secondEncoding)
	b = binary.AppendUvarint(b, uint64(requests))
	b = binary.AppendUvarint(b, uint64(pageviews))
	b = binary.AppendUvarint(b, uint64(len(visitors)))
	for _, h := range visitors {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	b = appendPathList(b, paths)
	if len(pairs) == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(pairs)))
	for p, vs := range pairs {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.BigEndian.AppendUint64(b, v)
		}
	}
	return b
}

func (v *second) decode(b []byte) error {
	if len(b) == 0 || b[0] != secondEncoding {
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
	paths := d.listLen()
	v.Paths = make(map[string]int64, paths)
	d.entries(paths, func(p []byte, n int64) { v.Paths[string(p)] = n })
	if d.err == nil && len(d.b) > 0 {
		n := d.listLen()
		v.Pairs = make(map[string][]uint64, n)
		for range n {
			p := d.bytes()
			k := d.uvarint()
			if d.err != nil || k > uint64(len(d.b))/8 {
				return fmt.Errorf("second pairs: %w", ErrCorrupt)
			}
			vs := make([]uint64, k)
			for i := range vs {
				vs[i] = binary.BigEndian.Uint64(d.b[8*i:])
			}
			d.b = d.b[8*k:]
			v.Pairs[string(p)] = vs
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return fmt.Errorf("second: %w", ErrCorrupt)
	}
	return nil
}
