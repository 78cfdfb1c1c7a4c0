package storage

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/axiomhq/hyperloglog"
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// recordEncoding is the version byte that starts every stored minute, hour
// and day. A reader refuses any other value rather than guess. Encoding 2
// is encoding 1 followed by a checksum of everything before it: a byte of
// a count or of a sketch changed on disk still decodes, and only the sum
// tells (see Check). Records of encoding 1, written before schema 5, are
// read as they are, unchecked, until a commit rewrites them.
const (
	recordEncoding = 2
	recordUnsummed = 1
	recordSumSize  = 4
	secondEncoding = 1 // the version byte of a stored second (see second.go)
)

// castagnoli is the table of the records' checksum, CRC-32C: computed in
// hardware on the machines logtally runs on, and sure to catch any change
// of up to 32 bits in a row.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The bits of a record's flags.
const (
	flagApproximate = 1 << 0 // its visitors are an estimate
	// flagSet says that the field of the sketch holds the minute's exact
	// visitors instead, sorted and distinct, 8 bytes big-endian each (see
	// record.set): the sketch can be made from them whenever it is needed.
	flagSet = 1 << 1
	// flagDense, with flagSet, says that the sketch the visitors make is
	// dense (see record.denseSet).
	flagDense  = 1 << 2
	knownFlags = flagApproximate | flagSet | flagDense
)

// record is a stored value: the counts and the visitor sketch that lets
// minutes merge into hours and days.
type record struct {
	logtally.Counts
	hll *hyperloglog.Sketch
	// set is a minute's exact visitors, encoded as encodeHashes does, which
	// it stores in place of its sketch while it keeps them (flagSet; hll
	// is then nil): the sketch would only repeat them (see sets.go).
	// Compaction turns the set into the sketch (compactSets). Nil if the
	// minute keeps none.
	set []byte
	// denseSet says that the sketch of set is dense, as a commit of set's
	// visitors would have made it (see addSketch): the set reached
	// denseFrom visitors, or a commit brought it there counting some it
	// held already again.
	denseSet bool
	// An hour's or a day's sketch is either hll, dense, or its keys,
	// sparse, while a commit works on it (see rollup.go); a minute's is
	// hll, in the form its visitors call for (see addSketch).
	dense  bool
	sparse []uint32 // sorted, distinct
	// keys are the sparse keys of the visitors that a commit preparing an
	// hour or a day has gathered for its sketch, repeats included (see
	// gather).
	keys []uint32
}

func (r *record) sketch() *hyperloglog.Sketch {
	if r.hll == nil {
		r.hll = hyperloglog.New14()
	}
	return r.hll
}

// add adds a delta's counts (not its visitors or pages) to r.
func (r *record) add(d *tally.Delta) {
	r.addTotals(d.Requests, d.PageViews, d.Bytes, d.Rejected, &d.Status)
}

// addTotals adds counts that merge by addition to r.
func (r *record) addTotals(requests, pageViews, bytes, rejected int64, status *[5]int64) {
	r.Requests += requests
	r.PageViews += pageViews
	r.Bytes += bytes
	r.Rejected += rejected
	for i, n := range status {
		r.Status[i] += n
	}
}

// mergeTop folds a minute's page views per path (distinct paths) into r's
// top pages, keeping the n most viewed and adding the rest to Other. A path
// that was folded into Other earlier is not brought back: minute top lists
// are exact for paths that stay in them.
func (r *record) mergeTop(paths []logtally.PageCount, n int) {
	if len(paths) == 0 {
		return
	}
	if len(r.Top) > 0 {
		known := make(map[string]int, len(r.Top))
		for i, pc := range r.Top {
			known[pc.Path] = i
		}
		for _, pc := range paths {
			if i, ok := known[pc.Path]; ok {
				r.Top[i].PageViews += pc.PageViews
			} else {
				r.Top = append(r.Top, pc)
			}
		}
		r.Top = selectTop(r.Top, n, &r.Other)
		return
	}
	r.Top = selectTop(paths, n, &r.Other)
}

// topKey is a page count as the top pages are ordered: by page views, most
// first, then by path. The path's first 8 bytes, big-endian, order most
// paths without a call to compare them: ties of page views are the rule
// (most of a busy minute's paths have a view or two), ties of a path's
// first 8 bytes rarer.
type topKey struct {
	views  int64
	prefix uint64
	i      int32 // index in the page counts
}

// pathPrefix returns the first 8 bytes of p as a big-endian number, zeros
// after a shorter p.
func pathPrefix(p string) uint64 {
	if len(p) >= 8 {
		return uint64(p[0])<<56 | uint64(p[1])<<48 | uint64(p[2])<<40 | uint64(p[3])<<32 |
			uint64(p[4])<<24 | uint64(p[5])<<16 | uint64(p[6])<<8 | uint64(p[7])
	}
	var x uint64
	for i := range len(p) {
		x |= uint64(p[i]) << (56 - 8*i)
	}
	return x
}

// selectTop returns the n first of pages in byViews order, in that order,
// in a new slice, and adds the page views of the others to other. pages
// is not changed.
func selectTop(pages []logtally.PageCount, n int, other *int64) []logtally.PageCount {
	n = max(n, 0)
	var buf [256]topKey
	keys := buf[:0]
	for i := range pages {
		keys = append(keys, topKey{views: pages[i].PageViews, prefix: pathPrefix(pages[i].Path), i: int32(i)})
	}
	order := func(a, b topKey) int {
		switch {
		case a.views != b.views:
			return cmp.Compare(b.views, a.views)
		case a.prefix != b.prefix:
			return cmp.Compare(a.prefix, b.prefix)
		}
		return cmp.Compare(pages[a.i].Path, pages[b.i].Path)
	}
	if len(keys) > n {
		if n > 0 {
			quickselect(keys, n-1, order)
		}
		for _, k := range keys[n:] {
			*other += k.views
		}
		keys = keys[:n]
	}
	slices.SortFunc(keys, order)
	top := make([]logtally.PageCount, len(keys))
	for j, k := range keys {
		top[j] = pages[k.i]
	}
	return top
}

// byViews orders page counts by page views, then path.
func byViews(a, b logtally.PageCount) int {
	if c := cmp.Compare(b.PageViews, a.PageViews); c != 0 {
		return c
	}
	return cmp.Compare(a.Path, b.Path)
}

// quickselect reorders s so that s[k] is what sorting s by cmp would put
// there, with nothing after it that sorts before it and nothing before it
// that sorts after it.
func quickselect[T any](s []T, k int, cmp func(a, b T) int) {
	lo, hi := 0, len(s)-1
	for lo < hi {
		pivot := s[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for cmp(s[i], pivot) < 0 {
				i++
			}
			for cmp(s[j], pivot) > 0 {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// encode lays a record out as: version; uvarint flags (see flagSet);
// uvarint requests, page views, visitors, bytes, rejected; five uvarint
// status classes; uvarint n and n x (uvarint length, path, uvarint views)
// top pages; uvarint other; uvarint length and the sketch's binary form,
// or with flagSet the visitor set; the CRC-32C of all of that, 4 bytes
// big-endian.
func (r *record) encode() ([]byte, error) {
	switch {
	case r.set != nil:
		return appendSum(append(r.appendHead(r.flags(true), len(r.set)), r.set...)), nil
	case r.hll == nil:
		return r.encodeSketch(nil), nil
	}
	sk, err := r.hll.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return r.encodeSketch(sk), nil
}

// encodeSketch is encode with sk, a sketch's binary form (nil: none), in
// place of r's sketch. r holds no set.
func (r *record) encodeSketch(sk []byte) []byte {
	return appendSum(append(r.appendHead(r.flags(false), len(sk)), sk...))
}

// encodeSet is encode of a minute whose exact visitors are set, sorted and
// distinct, in place of r.set: a minute stored new is encoded without its
// set encoded apart first.
func (r *record) encodeSet(set []uint64) []byte {
	return r.encodeSetIn(nil, set)
}

// maxCarvedRecord is the largest record encodeSetIn carves.
const maxCarvedRecord = 512

// encodeSetIn is encodeSet in a slice carved from buf (see carve), if buf
// is not nil and the record is small: a commit of many sites' new minutes,
// each a few dozen bytes, in one allocation rather than one each. A busy
// minute's record, kilobytes long, has an allocation of its own, which
// costs less than the buffer's growing for it.
func (r *record) encodeSetIn(buf *[]byte, set []uint64) []byte {
	flags := r.flags(len(set) > 0)
	var b []byte
	if size := r.encodedSize(flags, 8*len(set)); buf == nil || size > maxCarvedRecord {
		b = make([]byte, 0, size)
	} else {
		b = carve(buf, size)[:0]
	}
	b = r.putHead(b, flags, 8*len(set))
	for _, v := range set {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return appendSum(b)
}

// flags returns r's flags; set says that it holds its visitor set.
func (r *record) flags(set bool) uint64 {
	var f uint64
	if r.Approximate {
		f |= flagApproximate
	}
	if set {
		f |= flagSet
		if r.denseSet {
			f |= flagDense
		}
	}
	return f
}

// appendHead returns the version and fields of r up to the length of its
// sketch or set, which is field bytes long, in a slice with room for them
// and the checksum.
func (r *record) appendHead(flags uint64, field int) []byte {
	return r.putHead(make([]byte, 0, r.encodedSize(flags, field)), flags, field)
}

// encodedSize is the size of r encoded with flags and a sketch or set of
// field bytes, checksum included.
func (r *record) encodedSize(flags uint64, field int) int {
	// Exactly the record's size: a commit of many sites holds tens of
	// thousands of small records until its transaction writes them, and
	// a bound (of 10 bytes a count) made them half again their size.
	size := 1 + pathListSize(r.Top) + uvarintLen(uint64(r.Other)) + uvarintLen(uint64(field)) + field + recordSumSize
	for _, v := range r.head(flags) {
		size += uvarintLen(v)
	}
	return size
}

// head is r's counts as they are encoded, after its flags.
func (r *record) head(flags uint64) [11]uint64 {
	return [...]uint64{flags, uint64(r.Requests), uint64(r.PageViews), uint64(r.Visitors),
		uint64(r.Bytes), uint64(r.Rejected), uint64(r.Status[0]), uint64(r.Status[1]),
		uint64(r.Status[2]), uint64(r.Status[3]), uint64(r.Status[4])}
}

// putHead appends to b what appendHead returns.
func (r *record) putHead(b []byte, flags uint64, field int) []byte {
	b = append(b, recordEncoding)
	for _, v := range r.head(flags) {
		b = binary.AppendUvarint(b, v)
	}
	b = appendPathList(b, r.Top)
	b = binary.AppendUvarint(b, uint64(r.Other))
	return binary.AppendUvarint(b, uint64(field))
}

// appendSum appends to an encoded record its checksum.
func appendSum(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// unsummed returns the fields of an encoded record, its version byte and
// checksum cut off once the checksum is found right.
func unsummed(b []byte) ([]byte, error) {
	switch {
	case len(b) > 0 && b[0] == recordUnsummed:
		return b[1:], nil
	case len(b) < 1+recordSumSize || b[0] != recordEncoding:
		return nil, fmt.Errorf("record version: %w", ErrCorrupt)
	}
	body, sum := b[:len(b)-recordSumSize], binary.BigEndian.Uint32(b[len(b)-recordSumSize:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("record checksum: %w", ErrCorrupt)
	}
	return body[1:], nil
}

// decode reads an encoded record. With visitors, it reads the sketch, or
// the set that stands for it. Nothing in r aliases b.
func (r *record) decode(b []byte, visitors bool) error {
	field, err := r.decodeFields(b, true)
	if err != nil {
		return err
	}
	r.hll = nil
	switch {
	case !visitors:
		r.set = nil
	case r.set != nil:
		r.set = bytes.Clone(field)
	default:
		return r.readSketch(field)
	}
	return nil
}

// readSketch makes r's sketch from its binary form (none if empty).
func (r *record) readSketch(field []byte) error {
	r.hll = nil
	if len(field) == 0 {
		return nil
	}
	r.hll = hyperloglog.New14()
	if err := r.hll.UnmarshalBinary(field); err != nil {
		r.hll = nil
		return fmt.Errorf("record sketch: %v: %w", err, ErrCorrupt)
	}
	return nil
}

// decodeCounts reads an encoded record's counts, skipping its top pages
// (r.Top is nil and r.Other 0), and returns its sketch's binary form, or
// its set if r.set is not nil, which alias b. A series reads thousands of
// minutes and none of their pages.
func (r *record) decodeCounts(b []byte) (field []byte, err error) {
	field, err = r.decodeFields(b, false)
	r.Top, r.Other, r.hll = nil, 0, nil
	return field, err
}

// decodeFields reads the fields of an encoded record, the top pages only
// if top, and returns the sketch's binary form or the set, which alias b:
// r.set is the set if the record holds one, nil if not.
func (r *record) decodeFields(b []byte, top bool) (field []byte, err error) {
	fields, err := unsummed(b)
	if err != nil {
		return nil, err
	}
	d := decoder{b: fields}
	flags := d.uvarint()
	r.Approximate, r.denseSet = flags&flagApproximate != 0, flags&flagDense != 0
	r.Requests, r.PageViews, r.Visitors = int64(d.uvarint()), int64(d.uvarint()), int64(d.uvarint())
	r.Bytes, r.Rejected = int64(d.uvarint()), int64(d.uvarint())
	for i := range r.Status {
		r.Status[i] = int64(d.uvarint())
	}
	if top {
		r.Top = d.pageCounts()
	} else {
		d.pathList(func([]byte, int64) {})
	}
	r.Other = int64(d.uvarint())
	field = d.bytes()
	switch {
	case d.err != nil:
		return nil, fmt.Errorf("record: %w", d.err)
	case len(d.b) != 0:
		return nil, fmt.Errorf("record trailing bytes: %w", ErrCorrupt)
	case flags&^knownFlags != 0:
		return nil, fmt.Errorf("record flags %#x: %w", flags, ErrCorrupt)
	}
	r.set = nil
	if flags&flagSet != 0 {
		if err := checkSetField(field, r); err != nil {
			return nil, err
		}
		r.set = field
	} else if r.denseSet {
		return nil, fmt.Errorf("record flags %#x: dense without a set: %w", flags, ErrCorrupt)
	}
	return field, nil
}

// errRollupSet is the error of an hour or a day that holds a visitor set,
// which only a minute keeps.
var errRollupSet = fmt.Errorf("a visitor set in an hour or a day: %w", ErrCorrupt)

// checkSetField checks the set of a record whose counts r holds: whole
// hashes, sorted and distinct, as many as its exact visitors.
func checkSetField(set []byte, r *record) error {
	switch {
	case len(set) == 0 || len(set)%8 != 0:
		return fmt.Errorf("visitor set of %d bytes: %w", len(set), ErrCorrupt)
	case r.Approximate || int64(len(set)/8) != r.Visitors:
		return fmt.Errorf("visitor set of %d with %d visitors (approximate %t): %w", len(set)/8, r.Visitors, r.Approximate, ErrCorrupt)
	}
	return checkHashes(set)
}

// encodeHashes encodes a sorted set of visitor hashes.
func encodeHashes(set []uint64) []byte {
	b := make([]byte, 0, 8*len(set))
	for _, v := range set {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func decodeHashes(b []byte) ([]uint64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("visitor set: %w", ErrCorrupt)
	}
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return out, nil
}

// checkHashes checks an encoded visitor set: whole hashes, sorted and
// distinct, as mergeHashes writes them.
func checkHashes(b []byte) error {
	if len(b)%8 != 0 {
		return fmt.Errorf("visitor set of %d bytes: %w", len(b), ErrCorrupt)
	}
	for i := 8; i < len(b); i += 8 {
		if binary.BigEndian.Uint64(b[i:]) <= binary.BigEndian.Uint64(b[i-8:]) {
			return fmt.Errorf("visitor set out of order at %d of %d: %w", i/8, len(b)/8, ErrCorrupt)
		}
	}
	return nil
}

// mergeHashes merges a sorted, distinct delta into an encoded visitor set,
// returning the new encoded set and its size. It is a linear merge: a busy
// minute's set holds thousands of hashes and is rewritten by every commit
// that reaches the minute.
func mergeHashes(stored []byte, delta []uint64) ([]byte, int, error) {
	if len(stored)%8 != 0 {
		return nil, 0, fmt.Errorf("visitor set: %w", ErrCorrupt)
	}
	out := make([]byte, 0, len(stored)+8*len(delta))
	i, j := 0, 0
	for i < len(stored) && j < len(delta) {
		v := binary.BigEndian.Uint64(stored[i:])
		switch {
		case v < delta[j]:
			out = binary.BigEndian.AppendUint64(out, v)
			i += 8
		case v > delta[j]:
			out = binary.BigEndian.AppendUint64(out, delta[j])
			j++
		default:
			out = binary.BigEndian.AppendUint64(out, v)
			i += 8
			j++
		}
	}
	out = append(out, stored[i:]...)
	for _, v := range delta[j:] {
		out = binary.BigEndian.AppendUint64(out, v)
	}
	return out, len(out) / 8, nil
}

// mergeSorted merges two sorted, distinct lists into a sorted, distinct one.
func mergeSorted(a, b []uint64) []uint64 {
	if len(b) == 0 {
		return a
	}
	return mergeInto(make([]uint64, 0, len(a)+len(b)), a, b)
}

// mergeInto appends to out the union of the sorted a and b, sorted, each
// value once.
func mergeInto[T cmp.Ordered](out, a, b []T) []T {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// pathTally counts page views by path number in an array. Between uses every
// count is zero: take reads and zeroes the ones add touched.
type pathTally struct {
	n       []int64
	touched []int32
}

// grow makes room for path numbers below size.
func (t *pathTally) grow(size int) {
	if len(t.n) < size {
		t.n = make([]int64, size+size/4)
	}
}

func (t *pathTally) add(id int32, k int64) {
	if t.n[id] == 0 {
		t.touched = append(t.touched, id)
	}
	t.n[id] += k
}

// take appends the counted paths to dst, in the order first counted, and
// zeroes the tally.
func (t *pathTally) take(names []string, dst []logtally.PageCount) []logtally.PageCount {
	for _, id := range t.touched {
		dst = append(dst, logtally.PageCount{Path: names[id], PageViews: t.n[id]})
		t.n[id] = 0
	}
	t.touched = t.touched[:0]
	return dst
}

// takeIDs is take by path number. When the tally touched more than a
// sixteenth of its numbers, it takes them in number order, scanning the
// whole tally: a batch and the path log's dictionary number a site's paths
// in about the same order (first seen), so a commit then walks its
// numbering and the dictionary's arrays in order rather than missing the
// cache once per path, which costs more than the scan.
func (t *pathTally) takeIDs(dst []pathDelta) []pathDelta {
	if len(t.touched) > len(t.n)/16 {
		for id, n := range t.n {
			if n != 0 {
				dst = append(dst, pathDelta{int32(id), n})
				t.n[id] = 0
			}
		}
		t.touched = t.touched[:0]
		return dst
	}
	for _, id := range t.touched {
		dst = append(dst, pathDelta{id, t.n[id]})
		t.n[id] = 0
	}
	t.touched = t.touched[:0]
	return dst
}

// reset zeroes the tally without reading it.
func (t *pathTally) reset() {
	for _, id := range t.touched {
		t.n[id] = 0
	}
	t.touched = t.touched[:0]
}

// scratch is memory the writer reuses from one commit to the next. Only the
// holder of Store.writeMu uses it.
type scratch struct {
	pages, day pathTally
	top        []logtally.PageCount
	buckets    []int32  // sortHashes
	hashes     []uint64 // sortHashes
	values     arena
	numbers    numbering
	sketch     sketchBuf // a minute's sparse sketch (see minutePrep.sketch)
	// logPaths, logSlots and logIDs hold the days a commit logs (see
	// loggedDay), until its change is applied.
	logPaths []logtally.PageCount
	logSlots []int32
	logIDs   []int32
}

// carve returns n elements from the free end of *buf, which it extends:
// they stay the caller's until *buf is emptied, so that a commit's lists
// reuse the last commit's memory. A new buffer replaces *buf when it is
// full; the lists carved before keep the old one.
func carve[T any](buf *[]T, n int) []T {
	if cap(*buf)-len(*buf) < n {
		*buf = make([]T, 0, max(n, 2*cap(*buf)))
	}
	i := len(*buf)
	*buf = (*buf)[:i+n]
	return (*buf)[i : i+n : i+n]
}

// arena hands out the values a commit puts, from one buffer that the next
// commit reuses: bbolt copies values into its pages when the transaction
// commits, and a live commit puts a few megabytes of them (stored seconds,
// the path log) that would otherwise be garbage at once.
type arena struct{ buf []byte }

// alloc returns an empty slice with room for size bytes. It is valid until
// reset.
func (a *arena) alloc(size int) []byte {
	if cap(a.buf)-len(a.buf) < size {
		// Values handed out keep the old buffer alive until reset.
		a.buf = make([]byte, 0, max(size, 2*cap(a.buf), 64<<10))
	}
	n := len(a.buf)
	a.buf = a.buf[:n+size]
	return a.buf[n : n : n+size]
}

// reset makes the buffer reusable. The transaction that put the values must
// be over.
func (a *arena) reset() { a.buf = a.buf[:0] }

func (sc *scratch) reset() {
	sc.pages.reset()
	sc.day.reset()
	sc.values.reset()
	sc.numbers.reset()
	sc.logPaths = sc.logPaths[:0]
	sc.logSlots, sc.logIDs = sc.logSlots[:0], sc.logIDs[:0]
}
