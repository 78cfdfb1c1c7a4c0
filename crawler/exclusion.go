package crawler

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
)

// exclusions are the browser tokens that Crawler-Detect takes out of an
// agent before it tries the patterns (Mozilla/5.0, Safari/537.36, a phone
// named Cubot): every match, as one alternation of them would take them
// out, leftmost first and, at one place, the first exclusion that matches
// there. Go's matcher would run that alternation's fifty branches together
// at every byte (100 µs an agent); instead an automaton of their literals
// tells which exclusions the agent may hold (a browser's, a dozen; a
// crawler's, two or three), and only those are looked for, each alone.
type exclusions struct {
	res    []*regexp.Regexp
	lits   *automaton // the literals of the exclusions that have some
	always []int      // the exclusions known by no literal
}

// compileExclusions compiles the exclusions. One that may match the empty
// string, or needs what comes before its match (^, \b), is an error: it
// could not be looked for from the middle of an agent.
func compileExclusions(texts []string) (exclusions, error) {
	ex := exclusions{res: make([]*regexp.Regexp, len(texts))}
	var lits []string
	var owners []int
	for i, text := range texts {
		body := lowerPattern(text)
		tree, err := syntax.Parse(body, syntax.Perl)
		if err != nil {
			return ex, fmt.Errorf("exclusion %q: %w", text, err)
		}
		if looksBehind(tree) {
			return ex, fmt.Errorf("exclusion %q: ^ and \\b are not understood in an exclusion", text)
		}
		if ex.res[i], err = regexp.Compile(body); err != nil {
			return ex, fmt.Errorf("exclusion %q: %w", text, err)
		}
		if ex.res[i].MatchString("") {
			return ex, fmt.Errorf("exclusion %q matches the empty string", text)
		}
		l := required(tree.Simplify())
		if slices.Contains(l, "") || l == nil {
			ex.always = append(ex.always, i)
			continue
		}
		for _, lit := range l {
			lits = append(lits, lit)
			owners = append(owners, i)
		}
	}
	ex.lits = newAutomaton(lits, owners)
	return ex, nil
}

// looksBehind reports whether re asserts something of what comes before
// a position.
func looksBehind(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if looksBehind(sub) {
			return true
		}
	}
	return false
}

// strip returns s without the exclusions' matches, in a new slice.
func (ex *exclusions) strip(s []byte) []byte {
	// The exclusions that s may hold, and each one's next match from p
	// (nil: none left).
	var may []int
	next := make([][]int, len(ex.res))
	tried := make([]bool, len(ex.res))
	found := func(i int) {
		if !tried[i] {
			tried[i] = true
			if next[i] = ex.res[i].FindIndex(s); next[i] != nil {
				may = append(may, i)
			}
		}
	}
	for _, i := range ex.always {
		found(i)
	}
	ex.lits.each(s, func(i int) bool { found(i); return false })
	slices.Sort(may) // the first exclusion matching at a place is taken
	out := make([]byte, 0, len(s))
	p := 0
	for {
		best := -1
		for _, i := range may {
			re := ex.res[i]
			if m := next[i]; m != nil && m[0] < p { // overlapped by the match taken: look again
				if next[i] = re.FindIndex(s[p:]); next[i] != nil {
					next[i][0] += p
					next[i][1] += p
				}
			}
			if m := next[i]; m != nil && (best < 0 || m[0] < next[best][0]) {
				best = i
			}
		}
		if best < 0 {
			return append(out, s[p:]...)
		}
		out = append(out, s[p:next[best][0]]...)
		p = next[best][1]
	}
}
