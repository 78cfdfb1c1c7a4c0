package tally

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/logtally/logtally"
)

// batchEncoding is the version of the encoding AppendBinary writes. A
// change to the layout must come with a new version: encoded batches wait
// in outboxes across upgrades, so the decoder reads every earlier one too.
// Version 2 added the read positions.
const batchEncoding = 2

// MaxBatchViews is the most page views, summed over all its minutes and
// seconds, that an encoded batch may hold: decoding expands per-path counts
// into one Delta.Views entry per page view, and this bounds what a corrupt
// or hostile input can make it allocate (16 MiB). A batch of the default
// 50,000 lines holds at most 100,000.
const MaxBatchViews = 1 << 22

var (
	// ErrBadBatch means bytes given to Batch.UnmarshalBinary are not a batch
	// this version of logtally can read: truncated, corrupt, of an unknown
	// encoding version, or naming no valid site.
	ErrBadBatch = errors.New("bad batch encoding")
	// ErrBatchTooLarge means a batch holds more than MaxBatchViews page
	// views, so it cannot be encoded: a smaller --flush-lines makes smaller
	// batches.
	ErrBatchTooLarge = errors.New("batch too large to encode")
)

// MarshalBinary encodes what the batch carries for shipping to another
// store: see AppendBinary.
func (b *Batch) MarshalBinary() ([]byte, error) { return b.AppendBinary(nil) }

// AppendBinary appends the batch's encoding to dst: its site, its line
// count, each minute's and live second's deltas, and the read positions
// its lines end at. A delta is encoded with its visitors as a sorted set (a
// visitor's repeats within a minute or a second say nothing more) and its
// page views as a count per path, and only the paths the batch's page views
// use are written, numbered anew. The positions go with the batch so that
// the fleet knows how far a node's shipped lines reach (where a node whose
// database was restored resumes); the window start is not encoded.
//
// Layout, version 2 (varint: zig-zag, uvarint: unsigned, both LEB128):
//
//	byte     version (2; 1 is the same without the positions)
//	uvarint  len(site), site bytes
//	uvarint  lines
//	uvarint  paths; each: uvarint len, bytes  (in order of first use)
//	minutes, then seconds, each:
//	  uvarint  count
//	  each: key (the first a varint, the next uvarint key-previous-1),
//	        varint requests, page views, bytes, rejected, 5 status classes,
//	        uvarint visitors; each 8 bytes little-endian, strictly increasing,
//	        uvarint paths viewed; each uvarint path number (strictly
//	        increasing) and uvarint page views (at least 1)
//	uvarint  positions; each (by file, in byte order): uvarint len, file
//	         bytes, uvarint offset
//
// It does not change the batch.
func (b *Batch) AppendBinary(dst []byte) ([]byte, error) {
	e := batchEncoder{b: b, number: make([]int32, len(b.names))}
	for i := range e.number {
		e.number[i] = -1
	}
	// Number the paths in order of first use, so that the path table can be
	// written before the deltas that refer to it.
	var views int
	for _, m := range []map[int64]*Delta{b.minutes, b.seconds} {
		for _, d := range sortedDeltas(m) {
			if int64(len(d.Views)) != d.PageViews {
				return dst, fmt.Errorf("encode batch: a delta has %d page views but %d paths viewed", d.PageViews, len(d.Views))
			}
			views += len(d.Views)
			for _, id := range d.Views {
				if id < 0 || int(id) >= len(b.names) {
					return dst, fmt.Errorf("encode batch: path number %d of %d", id, len(b.names))
				}
				if e.number[id] < 0 {
					e.number[id] = int32(len(e.used))
					e.used = append(e.used, id)
				}
			}
		}
	}
	if views > MaxBatchViews {
		return dst, fmt.Errorf("encode batch: %d page views: %w", views, ErrBatchTooLarge)
	}
	dst = append(dst, batchEncoding)
	dst = appendString(dst, b.Site())
	dst = binary.AppendUvarint(dst, uint64(b.lines))
	dst = binary.AppendUvarint(dst, uint64(len(e.used)))
	for _, id := range e.used {
		dst = appendString(dst, b.names[id])
	}
	e.counts = make([]int64, len(e.used))
	var err error
	for _, m := range []map[int64]*Delta{b.minutes, b.seconds} {
		if dst, err = e.appendDeltas(dst, m); err != nil {
			return dst, err
		}
	}
	return appendPositions(dst, b.positions), nil
}

// appendPositions appends read positions, by file in byte order.
func appendPositions(dst []byte, positions map[string]int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(positions)))
	for _, file := range slices.Sorted(maps.Keys(positions)) {
		dst = appendString(dst, file)
		dst = binary.AppendUvarint(dst, uint64(positions[file]))
	}
	return dst
}

// batchEncoder holds AppendBinary's scratch space.
type batchEncoder struct {
	b        *Batch
	number   []int32 // batch path id -> encoded path number, or -1
	used     []int32 // encoded path number -> batch path id
	counts   []int64 // page views per encoded path number, for one delta
	touched  []int32 // encoded path numbers with counts != 0
	visitors []uint64
}

func (e *batchEncoder) appendDeltas(dst []byte, m map[int64]*Delta) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(m)))
	var prev int64
	first := true
	for key, d := range sortedDeltas(m) {
		if first {
			dst = binary.AppendVarint(dst, key)
			first = false
		} else {
			gap := key - prev
			if gap <= 0 { // only when the keys are more than 2^63 apart
				return dst, fmt.Errorf("encode batch: keys %d and %d too far apart", prev, key)
			}
			dst = binary.AppendUvarint(dst, uint64(gap-1))
		}
		prev = key
		for _, v := range []int64{d.Requests, d.PageViews, d.Bytes, d.Rejected,
			d.Status[0], d.Status[1], d.Status[2], d.Status[3], d.Status[4]} {
			dst = binary.AppendVarint(dst, v)
		}
		e.visitors = append(e.visitors[:0], d.Visitors...)
		slices.Sort(e.visitors)
		e.visitors = slices.Compact(e.visitors)
		dst = binary.AppendUvarint(dst, uint64(len(e.visitors)))
		for _, v := range e.visitors {
			dst = binary.LittleEndian.AppendUint64(dst, v)
		}
		e.touched = e.touched[:0]
		for _, id := range d.Views {
			n := e.number[id]
			if e.counts[n] == 0 {
				e.touched = append(e.touched, n)
			}
			e.counts[n]++
		}
		slices.Sort(e.touched)
		dst = binary.AppendUvarint(dst, uint64(len(e.touched)))
		for _, n := range e.touched {
			dst = binary.AppendUvarint(dst, uint64(n))
			dst = binary.AppendUvarint(dst, uint64(e.counts[n]))
			e.counts[n] = 0
		}
	}
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// UnmarshalBinary replaces the batch with the one data encodes (see
// AppendBinary). The decoded batch answers Minutes, Seconds and Lines as
// the encoded one did, except that each delta's Visitors is a sorted set
// and its Views are grouped by path; Paths holds only the paths its page
// views use. It has the read positions of the encoding (none for an
// encoding of version 1). An error wraps ErrBadBatch, and
// leaves the batch unchanged.
func (b *Batch) UnmarshalBinary(data []byte) error {
	nb := NewBatch()
	d := batchDecoder{data: data}
	if err := d.batch(nb); err != nil {
		return fmt.Errorf("%w: %v (at byte %d of %d)", ErrBadBatch, err, d.off, len(data))
	}
	*b = *nb
	return nil
}

// batchDecoder reads an encoded batch.
type batchDecoder struct {
	data     []byte
	off      int
	expanded int // page views expanded so far
}

var (
	errTruncated = errors.New("truncated")
	errVarint    = errors.New("bad varint")
)

func (d *batchDecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.data[d.off:])
	if n == 0 {
		return 0, errTruncated
	}
	if n < 0 {
		return 0, errVarint
	}
	d.off += n
	return v, nil
}

// varint reads a zig-zag encoded signed varint, as binary.AppendVarint
// writes it.
func (d *batchDecoder) varint() (int64, error) {
	u, err := d.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

// count reads a uvarint that counts items of at least min bytes each, so
// that a corrupt count cannot make the decoder allocate more than the input
// could hold.
func (d *batchDecoder) count(min int) (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.data)-d.off)/uint64(min) {
		return 0, fmt.Errorf("count %d larger than the input", n)
	}
	return int(n), nil
}

func (d *batchDecoder) string() (string, error) {
	n, err := d.count(1)
	if err != nil {
		return "", err
	}
	s := string(d.data[d.off : d.off+n])
	d.off += n
	return s, nil
}

func (d *batchDecoder) batch(b *Batch) error {
	if len(d.data) == 0 {
		return errTruncated
	}
	version := d.data[0]
	if version < 1 || version > batchEncoding {
		return fmt.Errorf("encoding version %d, want 1 to %d", version, batchEncoding)
	}
	d.off = 1
	site, err := d.string()
	if err != nil {
		return err
	}
	if !logtally.ValidSite(site) {
		return fmt.Errorf("site %q: not a site name", site)
	}
	b.site = site
	lines, err := d.uvarint()
	if err != nil {
		return err
	}
	if lines > math.MaxInt32 {
		return fmt.Errorf("%d lines", lines)
	}
	b.lines = int(lines)
	npaths, err := d.count(1)
	if err != nil {
		return err
	}
	if npaths > math.MaxInt32 {
		return fmt.Errorf("%d paths", npaths)
	}
	b.names = make([]string, 0, npaths)
	for range npaths {
		p, err := d.string()
		if err != nil {
			return err
		}
		if _, dup := b.ids[p]; dup {
			return fmt.Errorf("path %q twice", p)
		}
		b.ids[p] = int32(len(b.names))
		b.names = append(b.names, p)
	}
	for _, m := range []map[int64]*Delta{b.minutes, b.seconds} {
		if err := d.deltas(b, m); err != nil {
			return err
		}
	}
	if version >= 2 {
		if err := d.positions(b); err != nil {
			return err
		}
	}
	if d.off != len(d.data) {
		return fmt.Errorf("%d bytes after the batch", len(d.data)-d.off)
	}
	return nil
}

// positions reads the read positions, files in strictly increasing order.
func (d *batchDecoder) positions(b *Batch) error {
	n, err := d.count(2)
	if err != nil {
		return err
	}
	prev := ""
	for i := range n {
		file, err := d.string()
		if err != nil {
			return err
		}
		if i > 0 && file <= prev {
			return fmt.Errorf("position of %q after %q", file, prev)
		}
		off, err := d.uvarint()
		if err != nil {
			return err
		}
		if off > math.MaxInt64 {
			return fmt.Errorf("position %d of %q", off, file)
		}
		b.positions[file], prev = int64(off), file
	}
	return nil
}

// minDeltaBytes is the least a delta takes: a key, nine counts and two
// list lengths of one byte each.
const minDeltaBytes = 12

func (d *batchDecoder) deltas(b *Batch, m map[int64]*Delta) error {
	n, err := d.count(minDeltaBytes)
	if err != nil {
		return err
	}
	var key int64
	for i := range n {
		if i == 0 {
			if key, err = d.varint(); err != nil {
				return err
			}
		} else {
			gap, err := d.uvarint()
			if err != nil {
				return err
			}
			next := key + int64(gap) + 1
			if gap >= math.MaxInt64 || next <= key {
				return fmt.Errorf("key after %d out of range", key)
			}
			key = next
		}
		c := &Delta{}
		for _, p := range []*int64{&c.Requests, &c.PageViews, &c.Bytes, &c.Rejected,
			&c.Status[0], &c.Status[1], &c.Status[2], &c.Status[3], &c.Status[4]} {
			if *p, err = d.varint(); err != nil {
				return err
			}
		}
		nv, err := d.count(8)
		if err != nil {
			return err
		}
		if nv > 0 {
			c.Visitors = make([]uint64, nv)
		}
		for j := range c.Visitors {
			c.Visitors[j] = binary.LittleEndian.Uint64(d.data[d.off:])
			d.off += 8
			if j > 0 && c.Visitors[j] <= c.Visitors[j-1] {
				return errors.New("visitors not strictly increasing")
			}
		}
		if err := d.views(b, c); err != nil {
			return err
		}
		m[key] = c
	}
	return nil
}

// views reads a delta's page views per path and expands them into Views.
func (d *batchDecoder) views(b *Batch, c *Delta) error {
	np, err := d.count(2)
	if err != nil {
		return err
	}
	var total uint64
	prev := -1
	for range np {
		id, err := d.uvarint()
		if err != nil {
			return err
		}
		if id >= uint64(len(b.names)) || int(id) <= prev {
			return fmt.Errorf("path number %d after %d, of %d paths", id, prev, len(b.names))
		}
		prev = int(id)
		views, err := d.uvarint()
		if err != nil {
			return err
		}
		if views == 0 || views > MaxBatchViews-uint64(d.expanded) {
			return fmt.Errorf("%d page views of a path, %d before", views, d.expanded)
		}
		d.expanded += int(views)
		total += views
		c.Views = slices.Grow(c.Views, int(views))
		for range views {
			c.Views = append(c.Views, int32(id))
		}
	}
	if total != uint64(c.PageViews) {
		return fmt.Errorf("%d page views, %d counted by path", c.PageViews, total)
	}
	return nil
}
