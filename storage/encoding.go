package storage

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// minuteEncoding is the version byte that starts every stored minute.
const minuteEncoding = 1

// minuteValue is a minute as stored: counts, and the sorted set of visitor
// hashes that makes the minute's distinct-visitor count exact across batches.
type minuteValue struct {
	requests  int64
	pageviews int64
	visitors  []uint64 // sorted, distinct
	paths     map[string]int64
}

func (m *minuteValue) merge(d *minuteDelta) {
	m.requests += d.requests
	m.pageviews += d.pageviews
	for v := range d.visitors {
		m.visitors = append(m.visitors, v)
	}
	slices.Sort(m.visitors)
	m.visitors = slices.Compact(m.visitors)
	if len(d.paths) > 0 && m.paths == nil {
		m.paths = make(map[string]int64, len(d.paths))
	}
	for p, n := range d.paths {
		m.paths[p] += n
	}
}

// encode: version; uvarint requests, pageviews; uvarint n, n x uint64
// visitor; uvarint n, n x (uvarint length, path, uvarint page views), paths
// in byte order so that the encoding is deterministic.
func (m *minuteValue) encode() []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+8*len(m.visitors))
	b = append(b, minuteEncoding)
	b = binary.AppendUvarint(b, uint64(m.requests))
	b = binary.AppendUvarint(b, uint64(m.pageviews))
	b = binary.AppendUvarint(b, uint64(len(m.visitors)))
	for _, v := range m.visitors {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(m.paths)))
	for _, p := range slices.Sorted(maps.Keys(m.paths)) {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, uint64(m.paths[p]))
	}
	return b
}

func (m *minuteValue) decode(b []byte) error {
	if len(b) == 0 || b[0] != minuteEncoding {
		return fmt.Errorf("minute encoding: %w", ErrCorrupt)
	}
	b = b[1:]
	var vals [3]uint64
	for i := range vals {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("minute counts: %w", ErrCorrupt)
		}
		vals[i], b = v, b[n:]
	}
	if uint64(len(b)) < 8*vals[2] {
		return fmt.Errorf("minute visitors: %w", ErrCorrupt)
	}
	m.requests, m.pageviews = int64(vals[0]), int64(vals[1])
	m.visitors = make([]uint64, vals[2])
	for i := range m.visitors {
		m.visitors[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	b = b[8*vals[2]:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return fmt.Errorf("minute paths: %w", ErrCorrupt)
	}
	b = b[k:]
	m.paths = make(map[string]int64, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return fmt.Errorf("minute path: %w", ErrCorrupt)
		}
		p := string(b[k : k+int(l)])
		b = b[k+int(l):]
		c, k := binary.Uvarint(b)
		if k <= 0 {
			return fmt.Errorf("minute path count: %w", ErrCorrupt)
		}
		m.paths[p], b = int64(c), b[k:]
	}
	if len(b) != 0 {
		return fmt.Errorf("minute trailing bytes: %w", ErrCorrupt)
	}
	return nil
}
