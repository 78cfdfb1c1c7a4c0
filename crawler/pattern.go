package crawler

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// maxLiterals bounds the literals one pattern is known by: an alternation
// of alternations multiplies them.
const maxLiterals = 256

// pattern is one crawler pattern, compiled: a regular expression over a
// user agent in lower case, and the literals that any match of it holds.
type pattern struct {
	text     string         // as the list gives it
	re       *regexp.Regexp // nil when the pattern is its literals: one found is a match
	notAhead []byte         // a trailing (?!X): a match must not be followed by X
	lits     []string       // any match holds one of these; none: it must always be tried
}

// compilePattern compiles one pattern of the list. Go's regular
// expressions have no lookahead, which one pattern of Crawler-Detect uses
// (Yandex(?!Search)): a negative lookahead of a literal at the end of a
// pattern is checked by hand.
func compilePattern(text string) (pattern, error) {
	p := pattern{text: text}
	body := lowerPattern(text)
	if i := strings.Index(body, "(?!"); i >= 0 {
		ahead, ok := strings.CutSuffix(body[i+3:], ")")
		if !ok || regexp.QuoteMeta(ahead) != ahead {
			return p, fmt.Errorf("pattern %q: a lookahead is only understood as (?!LITERAL) at its end", text)
		}
		body, p.notAhead = body[:i], []byte(ahead)
	}
	tree, err := syntax.Parse(body, syntax.Perl)
	if err != nil {
		return p, fmt.Errorf("pattern %q: %w", text, err)
	}
	tree = tree.Simplify()
	var exact bool
	if p.lits, exact = literals(tree); slices.Contains(p.lits, "") {
		p.lits, exact = nil, false // it matches every agent
	}
	if !exact || p.notAhead != nil {
		if p.re, err = regexp.Compile(body); err != nil {
			return p, fmt.Errorf("pattern %q: %w", text, err)
		}
		if !exact {
			p.lits = required(tree)
		}
	}
	return p, nil
}

// match reports whether the pattern matches s, an agent in lower case.
func (p *pattern) match(s []byte) bool {
	if p.re == nil {
		for _, lit := range p.lits {
			if bytes.Contains(s, []byte(lit)) {
				return true
			}
		}
		return false
	}
	if p.notAhead == nil {
		return p.re.Match(s)
	}
	for _, m := range p.re.FindAllIndex(s, -1) {
		if !bytes.HasPrefix(s[m[1]:], p.notAhead) {
			return true
		}
	}
	return false
}

// lowerPattern puts the ASCII letters of a pattern in lower case, but for
// the letter after a backslash (\d is not \D), so that it can be matched
// against an agent in lower case: Crawler-Detect matches without regard
// to ASCII case, and Go's (?i) would also fold the Kelvin sign into k.
func lowerPattern(p string) string {
	b := []byte(p)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '\\':
			i++
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// literals returns the strings whose occurrence is exactly a match of re
// (a literal, an alternation of literals, or either with an optional part
// before or after it), and whether re is of that kind.
func literals(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCapture:
		return literals(re.Sub[0])
	case syntax.OpQuest:
		l, ok := literals(re.Sub[0])
		return append([]string{""}, l...), ok
	case syntax.OpCharClass:
		var out []string
		for i := 0; i < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) == 4 {
					return nil, false
				}
				out = append(out, string(r))
			}
		}
		return out, true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l, ok := literals(sub)
			if !ok || len(out)+len(l) > maxLiterals {
				return nil, false
			}
			out = append(out, l...)
		}
		return out, true
	case syntax.OpConcat:
		subs := re.Sub
		for len(subs) > 0 && optional(subs[0]) {
			subs = subs[1:]
		}
		for len(subs) > 0 && optional(subs[len(subs)-1]) {
			subs = subs[:len(subs)-1]
		}
		if len(subs) == 0 {
			return nil, false
		}
		out := []string{""}
		for _, sub := range subs {
			l, ok := literals(sub)
			if !ok || len(out)*len(l) > maxLiterals {
				return nil, false
			}
			out = cross(out, l)
		}
		return out, true
	}
	return nil, false
}

// optional reports whether re may match the empty string wherever it
// stands, so that at either end of a pattern it changes nothing about
// whether the pattern matches.
func optional(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpQuest, syntax.OpEmptyMatch:
		return true
	case syntax.OpRepeat:
		return re.Min == 0
	case syntax.OpCapture:
		return optional(re.Sub[0])
	}
	return false
}

func cross(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// required returns literals one of which every match of re holds, the
// longest it can tell, or nil if it cannot tell any.
func required(re *syntax.Regexp) []string {
	if l, ok := literals(re); ok {
		return l
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return required(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l := required(sub)
			if l == nil {
				return nil
			}
			out = append(out, l...)
		}
		return out
	case syntax.OpConcat:
		var best []string
		for i := range re.Sub {
			// The longest run of literal parts from i on.
			for j := len(re.Sub); j > i; j-- {
				run := &syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[i:j]}
				if j == i+1 {
					run = re.Sub[i]
				}
				l, ok := literals(run)
				if !ok {
					l = nil
					if j == i+1 {
						l = required(re.Sub[i])
					}
				}
				if l != nil && shortest(l) > shortest(best) {
					best = l
				}
			}
		}
		return best
	}
	return nil
}

// shortest is the length of the shortest of lits, 0 for none.
func shortest(lits []string) int {
	n := 0
	for i, l := range lits {
		if i == 0 || len(l) < n {
			n = len(l)
		}
	}
	return n
}
