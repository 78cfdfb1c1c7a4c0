package crawler

import "slices"

// automaton is an Aho-Corasick automaton over a set of literals, as a
// dense table of transitions on byte classes: a byte of the literals has a
// class of its own, upper-case ASCII letters share their lower-case
// letter's, and every other byte is class 0. It finds, in one pass over an
// agent and one table lookup per byte, every literal the agent holds,
// whatever their number, and in any case.
type automaton struct {
	class [256]byte
	width int      // number of classes
	fast  []uint32 // the transitions: see flatten
	outs  [][]int  // the owners of the literals that end at each state

	// While it is built: next[state*width+class], and whether a literal
	// ends at a state (itself or a suffix of it).
	next []uint32
	hit  []bool
}

// newAutomaton builds the automaton of lits, lits[i] being owned by
// owners[i]. The literals must be in lower case.
func newAutomaton(lits []string, owners []int) *automaton {
	a := &automaton{width: 1}
	for _, lit := range lits {
		for i := range len(lit) {
			c := lit[i]
			if a.class[c] == 0 {
				a.class[c] = byte(a.width)
				if 'a' <= c && c <= 'z' {
					a.class[c-'a'+'A'] = byte(a.width)
				}
				a.width++
			}
		}
	}
	if a.width > 256 {
		panic("crawler: more than 255 byte classes") // cannot happen: upper and lower case share one
	}
	a.next = make([]uint32, 0, trieStates(lits)*a.width)
	a.addState()
	for i, lit := range lits {
		s := uint32(0)
		for j := range len(lit) {
			cell := int(s)*a.width + int(a.class[lit[j]])
			if a.next[cell] == 0 {
				a.next[cell] = a.addState()
			}
			s = a.next[cell]
		}
		a.hit[s] = true
		a.outs[s] = append(a.outs[s], owners[i])
	}
	a.link()
	a.flatten()
	a.next, a.hit = nil, nil
	return a
}

// trieStates returns the number of states of the trie of lits: the root,
// and a state for each byte of a literal after the prefix it shares with
// the literal before it, in sorted order. The table is made that size at
// once, no larger: it is kept whole, and grown it would be copied.
func trieStates(lits []string) int {
	sorted := slices.Clone(lits)
	slices.Sort(sorted)
	states, prev := 1, ""
	for _, lit := range sorted {
		common := 0
		for common < len(lit) && common < len(prev) && lit[common] == prev[common] {
			common++
		}
		states += len(lit) - common
		prev = lit
	}
	return states
}

func (a *automaton) addState() uint32 {
	a.next = append(a.next, make([]uint32, a.width)...)
	a.hit = append(a.hit, false)
	a.outs = append(a.outs, nil)
	return uint32(len(a.hit) - 1)
}

// link turns the trie into the automaton: breadth first, each state's
// missing transitions become those of its longest proper suffix that is a
// state (its fail state), and it inherits that state's outputs.
func (a *automaton) link() {
	fail := make([]uint32, len(a.hit))
	queue := make([]uint32, 0, len(a.hit))
	for c := range a.width {
		if s := a.next[c]; s != 0 {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := fail[s]
		if a.hit[f] {
			a.hit[s] = true
			a.outs[s] = append(a.outs[s], a.outs[f]...)
		}
		row := a.next[int(s)*a.width : int(s+1)*a.width]
		for c, t := range row {
			if t == 0 {
				row[c] = a.next[int(f)*a.width+c]
				continue
			}
			fail[t] = a.next[int(f)*a.width+c]
			queue = append(queue, t)
		}
	}
}

// any reports whether s holds one of the literals, in any case.
func (a *automaton) any(s []byte) bool {
	st := uint32(0)
	for _, c := range s {
		st = a.fast[st+uint32(a.class[c])]
		if st&hitBit != 0 {
			return true
		}
	}
	return false
}

// each calls f with the owner of every literal that s holds, as often as
// it occurs, until f returns true; it reports whether one did.
func (a *automaton) each(s []byte, f func(owner int) bool) bool {
	st := uint32(0)
	for _, c := range s {
		st = a.fast[st&^hitBit+uint32(a.class[c])]
		if st&hitBit == 0 {
			continue
		}
		for _, o := range a.outs[int(st&^hitBit)/a.width] {
			if f(o) {
				return true
			}
		}
	}
	return false
}

// hitBit marks, in fast, a transition to a state where a literal ends.
const hitBit = 1 << 31

// flatten turns next into fast, in place: each transition as the offset
// of its state's row, so that a step is one load and one add, with hitBit
// set where a literal ends; the first pass of Match makes 100 of them an
// agent. In place, for a table of its own would be megabytes more that
// every process clears and faults in at its start (BenchmarkNewDefault).
func (a *automaton) flatten() {
	if len(a.next) >= hitBit {
		panic("crawler: too many literals") // 40 million states, not a list of agents
	}
	a.fast = a.next
	for i, t := range a.fast {
		v := t * uint32(a.width)
		if a.hit[t] {
			v |= hitBit
		}
		a.fast[i] = v
	}
}
