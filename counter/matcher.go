package counter

import (
	"bytes"
	"math"
	"regexp"
	"slices"
)

// Match is one counter that a line counts, and the key it counts under.
type Match struct {
	Counter int // index of the counter in Matcher.Counters
	// Key is the captured values joined with "/", empty for a counter
	// without captures. It aliases the path, or, when the captures are
	// not next to each other in the path, storage of this Match that is
	// reused when the slice of Matches is. Copy it to keep it.
	Key []byte
	buf []byte // the storage of a Key joined from separate captures
}

// Matcher tells which counters a line counts. It is immutable, so safe for
// concurrent use.
type Matcher struct {
	counters []Counter
	ratios   []Ratio
	root     *node // nil when there are no counters
	// same[i] is the first counter declared that counts what counter i
	// counts (the same method, pattern and status): i itself, or the one
	// i is another name for. Only the first is matched.
	same []int
}

// node is a point in the trie of pattern segments: what the patterns that
// share the segments that lead here do with the next one.
type node struct {
	lits  []litChild       // literal segments, in declaration order
	byLit map[string]*node // lits by segment, when there are many
	holes []hole           // captures and *, tried in declaration order
	end   []terminal       // patterns that end here
	rest  []terminal       // patterns that end here with **
}

// linearLits is the most literal children looked up by scanning rather
// than in a map: comparing a few short strings is faster than hashing.
const linearLits = 8

type litChild struct {
	seg  string
	next *node
}

// hole is a segment with a capture or *: prefix, one byte or more that
// satisfy the constraint, suffix.
type hole struct {
	prefix, suffix string
	capture        bool           // a named capture, part of the key
	reText         string         // the constraint as written, to share holes
	set            *[256]bool     // the constraint as a byte class, or nil
	re             *regexp.Regexp // the constraint otherwise, or nil
	next           *node
}

// terminal is a counter whose pattern ends at a node, with what it asks of
// the method and status.
type terminal struct {
	counter int
	methods []string   // nil for any
	status  *statusSet // nil for any
}

// New compiles cfg into a Matcher. Its error is Validate's.
func New(cfg Config) (*Matcher, error) {
	counters, ratios, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	m := &Matcher{ratios: ratios}
	if len(counters) > 0 {
		m.root = &node{}
	}
	for i, k := range counters {
		m.counters = append(m.counters, k.Counter)
		m.same = append(m.same, m.root.add(k.pat.segs, terminal{counter: i, methods: k.Methods, status: k.status}))
	}
	if m.root != nil {
		m.root.index()
	}
	return m, nil
}

// add puts the pattern segs, which ends in t, under n, and returns the
// counter that t counts the same as: one added before whose pattern ends
// at the same node, the same way, with the same methods and status (so
// the same lines, under the same keys), or t's own.
func (n *node) add(segs []segment, t terminal) int {
	if len(segs) == 0 {
		return addTerminal(&n.end, t)
	}
	switch s := segs[0]; s.kind {
	case segRest:
		return addTerminal(&n.rest, t)
	case segLiteral:
		for _, c := range n.lits {
			if c.seg == s.lit {
				return c.next.add(segs[1:], t)
			}
		}
		next := &node{}
		n.lits = append(n.lits, litChild{s.lit, next})
		return next.add(segs[1:], t)
	case segHole:
		h := hole{prefix: s.prefix, suffix: s.suffix, capture: s.name != "", reText: s.re}
		for _, o := range n.holes {
			if o.prefix == h.prefix && o.suffix == h.suffix && o.capture == h.capture && o.reText == h.reText {
				return o.next.add(segs[1:], t)
			}
		}
		if s.re != "" {
			var ok bool
			if h.set, ok = byteSet(s.re); !ok {
				h.re = compileRegex(s.re)
			}
		}
		h.next = &node{}
		n.holes = append(n.holes, h)
		return h.next.add(segs[1:], t)
	}
	panic("counter: unknown segment kind")
}

// addTerminal appends t to ts unless a terminal there counts the same,
// and returns the counter of the one that does.
func addTerminal(ts *[]terminal, t terminal) int {
	for _, o := range *ts {
		if sameMethods(o.methods, t.methods) && sameStatus(o.status, t.status) {
			return o.counter
		}
	}
	*ts = append(*ts, t)
	return t.counter
}

func sameMethods(a, b []string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for _, m := range a {
		if !slices.Contains(b, m) {
			return false
		}
	}
	return true
}

func sameStatus(a, b *statusSet) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// index builds the maps of nodes with many literal children.
func (n *node) index() {
	if len(n.lits) > linearLits {
		n.byLit = make(map[string]*node, len(n.lits))
		for _, c := range n.lits {
			n.byLit[c.seg] = c.next
		}
	}
	for _, c := range n.lits {
		c.next.index()
	}
	for _, h := range n.holes {
		h.next.index()
	}
}

// Counters returns the declared counters; a Match's Counter indexes them.
func (m *Matcher) Counters() []Counter { return slices.Clone(m.counters) }

// Same returns the counter that counter i counts the same as: the first
// declared with the same method, pattern (captures named or not) and
// status, which matches the same lines under the same keys. Match
// reports that one alone, so the others are counted once, with it; Same(i)
// is i for a counter that counts lines of its own.
func (m *Matcher) Same(i int) int { return m.same[i] }

// Ratios returns the declared ratios.
func (m *Matcher) Ratios() []Ratio { return slices.Clone(m.ratios) }

// Index returns the index of the counter with the given name, or -1.
func (m *Matcher) Index(name string) int {
	return slices.IndexFunc(m.counters, func(c Counter) bool { return c.Name == name })
}

// Match appends to dst a Match for each counter that a request counts, in
// the order the counters were declared, and returns the extended slice.
// Of counters that count the same (see Same), only the first is reported.
// path is the request's path without its query; a path that does not start
// with "/", or is longer than 2 GiB, matches nothing. status 0 (a log
// format without a status) matches only counters without a status filter.
//
// To allocate nothing, pass the same slice, cut to dst[:0], for every
// line: a key joined from separate captures is built in storage that the
// slice's Matches keep. Keys are valid until path changes or dst is
// reused.
func (m *Matcher) Match(method, path []byte, status int, dst []Match) []Match {
	if m.root == nil || len(path) == 0 || path[0] != '/' || len(path) > math.MaxInt32 {
		return dst
	}
	// Set field by field: a composite literal is built in a temporary
	// and copied, which costs more than the walk for a short path.
	var w walker
	w.method, w.path, w.status, w.dst = method, path, status, dst
	w.walk(m.root, 1)
	// The trie gives matches in the order of its branches; sort the few
	// there are by counter.
	out := w.dst[len(dst):]
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Counter < out[j-1].Counter; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return w.dst
}

// walker is the state of one Match: the spans of the captures on the way
// from the root to the node being visited.
type walker struct {
	method, path []byte
	status       int
	dst          []Match
	ncap         int
	caps         [MaxCaptures][2]int32 // path[caps[i][0]:caps[i][1]] is a capture
}

// walk visits n, which the segments of the path before index i led to.
// i == len(path)+1 when the path has no segment left.
func (w *walker) walk(n *node, i int) {
	for k := range n.rest {
		w.emit(&n.rest[k])
	}
	if i > len(w.path) {
		for k := range n.end {
			w.emit(&n.end[k])
		}
		return
	}
	if len(n.lits) == 0 && len(n.holes) == 0 {
		return
	}
	j := bytes.IndexByte(w.path[i:], '/')
	if j < 0 {
		j = len(w.path)
	} else {
		j += i
	}
	seg := w.path[i:j]
	if next := n.lit(seg); next != nil {
		w.walk(next, j+1)
	}
	for k := range n.holes {
		h := &n.holes[k]
		if !h.match(seg) {
			continue
		}
		if !h.capture {
			w.walk(h.next, j+1)
			continue
		}
		w.caps[w.ncap] = [2]int32{int32(i + len(h.prefix)), int32(j - len(h.suffix))}
		w.ncap++
		w.walk(h.next, j+1)
		w.ncap--
	}
}

// lit returns the literal child of n for seg, or nil.
func (n *node) lit(seg []byte) *node {
	if n.byLit != nil {
		return n.byLit[string(seg)] // the compiler does not copy seg
	}
	for k := range n.lits {
		if c := &n.lits[k]; c.seg == string(seg) {
			return c.next
		}
	}
	return nil
}

// match reports whether seg is the hole's prefix, one byte or more that
// satisfy its constraint, and its suffix.
func (h *hole) match(seg []byte) bool {
	if len(seg) <= len(h.prefix)+len(h.suffix) ||
		string(seg[:len(h.prefix)]) != h.prefix || string(seg[len(seg)-len(h.suffix):]) != h.suffix {
		return false
	}
	v := seg[len(h.prefix) : len(seg)-len(h.suffix)]
	switch {
	case h.set != nil:
		for _, c := range v {
			if !h.set[c] {
				return false
			}
		}
		return true
	case h.re != nil:
		return h.re.Match(v)
	}
	return true
}

// emit appends a Match for t if the line's method and status are t's.
func (w *walker) emit(t *terminal) {
	if t.methods != nil && !hasMethod(t.methods, w.method) ||
		t.status != nil && !t.status.has(w.status) {
		return
	}
	k := len(w.dst)
	if k < cap(w.dst) {
		w.dst = w.dst[:k+1]
	} else {
		w.dst = append(w.dst, Match{})
	}
	mt := &w.dst[k]
	mt.Counter = t.counter
	mt.Key = w.key(mt)
}

func hasMethod(methods []string, m []byte) bool {
	for _, x := range methods {
		if x == string(m) {
			return true
		}
	}
	return false
}

// key returns the captures joined with "/": a slice of the path when they
// are next to each other in it (one capture, or {a}/{b}), else built in
// mt's storage.
func (w *walker) key(mt *Match) []byte {
	caps := w.caps[:w.ncap]
	if len(caps) == 0 {
		return nil
	}
	adjacent := true
	for k := 1; k < len(caps); k++ {
		if caps[k][0] != caps[k-1][1]+1 {
			adjacent = false
			break
		}
	}
	if adjacent {
		from, to := caps[0][0], caps[len(caps)-1][1]
		return w.path[from:to:to]
	}
	b := mt.buf[:0]
	for k, c := range caps {
		if k > 0 {
			b = append(b, '/')
		}
		b = append(b, w.path[c[0]:c[1]]...)
	}
	mt.buf = b
	return b
}
