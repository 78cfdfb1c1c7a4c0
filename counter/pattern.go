package counter

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// MaxCaptures is the most captures one pattern may have.
const MaxCaptures = 16

// segKind is what one segment of a pattern matches.
type segKind uint8

const (
	segLiteral segKind = iota // the segment is lit
	segHole                   // prefix, then one byte or more, then suffix
	segRest                   // ** : the rest of the path
)

// segment is one "/"-separated part of a pattern.
type segment struct {
	kind   segKind
	lit    string // segLiteral: the segment, unescaped
	prefix string // segHole: literal text before the hole, unescaped
	suffix string // segHole: literal text after it
	name   string // segHole: the capture's name; "" for *, which captures nothing
	re     string // segHole: the constraint as written, "" for none
}

// pattern is a parsed pattern.
type pattern struct {
	segs     []segment
	captures []string // names of the captures, in order
}

// parsePattern parses p, which starts at column col (1-based) of its
// declaration: errors give columns of the declaration. It checks the
// constraints' syntax too.
func parsePattern(p string, col int) (pattern, error) {
	var pat pattern
	if p == "" || p[0] != '/' {
		return pat, fmt.Errorf("%w: %q at column %d does not start with \"/\"; a pattern matches the path, as in /thumb/{id}.jpg",
			ErrPattern, p, col)
	}
	for i := 1; ; {
		seg, j, err := parseSegment(p, i, col)
		if err != nil {
			return pattern{}, err
		}
		if seg.kind == segRest && j < len(p) {
			return pattern{}, fmt.Errorf("%w: \"**\" at column %d must be the last segment, as in /api/**", ErrPattern, col+i)
		}
		if seg.kind == segHole && seg.name != "" {
			for _, n := range pat.captures {
				if n == seg.name {
					return pattern{}, fmt.Errorf("%w: capture {%s} at column %d is named twice; give each capture its own name",
						ErrPattern, seg.name, col+i)
				}
			}
			if len(pat.captures) == MaxCaptures {
				return pattern{}, fmt.Errorf("%w: capture {%s} at column %d is one too many; a pattern has at most %d captures",
					ErrPattern, seg.name, col+i, MaxCaptures)
			}
			pat.captures = append(pat.captures, seg.name)
		}
		pat.segs = append(pat.segs, seg)
		if j == len(p) {
			return pat, nil
		}
		i = j + 1 // past the "/"
	}
}

// parseSegment parses the segment of p that starts at i and returns it with
// the index of the "/" that ends it, or len(p).
func parseSegment(p string, i, col int) (segment, int, error) {
	var (
		seg  segment
		text []byte // literal text: the prefix, then the suffix once the hole is seen
		hole = -1   // index of the hole's { or *, if any
	)
	start := i
	for i < len(p) && p[i] != '/' {
		switch c := p[i]; c {
		case '\\':
			b, err := escaped(p, i, col)
			if err != nil {
				return seg, 0, err
			}
			text = append(text, b)
			i += 2
		case '}':
			return seg, 0, fmt.Errorf(`%w: "}" at column %d closes nothing; write \} for a literal "}"`, ErrPattern, col+i)
		case '?':
			return seg, 0, fmt.Errorf(`%w: "?" at column %d: a pattern matches the path without its query, which it cannot capture`,
				ErrPattern, col+i)
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				if i != start || i+2 < len(p) && p[i+2] != '/' {
					return seg, 0, fmt.Errorf(`%w: "**" at column %d must be a whole segment, as in /api/**; write \* for a literal "*"`,
						ErrPattern, col+i)
				}
				return segment{kind: segRest}, i + 2, nil
			}
			if hole >= 0 {
				return seg, 0, twoHoles(p, hole, i, col)
			}
			hole = i
			seg.kind, seg.prefix, text = segHole, string(text), nil
			i++
		case '{':
			if hole >= 0 {
				return seg, 0, twoHoles(p, hole, i, col)
			}
			name, re, end, err := parseCapture(p, i, col)
			if err != nil {
				return seg, 0, err
			}
			hole = i
			seg.kind, seg.prefix, text = segHole, string(text), nil
			seg.name, seg.re = name, re
			i = end
		default:
			text = append(text, c)
			i++
		}
	}
	if hole >= 0 {
		seg.suffix = string(text)
	} else {
		seg.lit = string(text)
	}
	return seg, i, nil
}

// escaped returns the byte that the backslash at p[i] escapes.
func escaped(p string, i, col int) (byte, error) {
	if i+1 == len(p) || !strings.ContainsRune(`{}*\`, rune(p[i+1])) {
		esc := `\`
		if i+1 < len(p) {
			esc = p[i : i+2]
		}
		return 0, fmt.Errorf(`%w: escape %q at column %d; only \{ \} \* and \\ are escapes`, ErrPattern, esc, col+i)
	}
	return p[i+1], nil
}

// twoHoles is the error for a segment with a second hole, at second, after
// the one at first.
func twoHoles(p string, first, second, col int) error {
	return fmt.Errorf("%w: %q at column %d is a second capture in the segment of %q at column %d; a segment holds one {capture} or *",
		ErrPattern, p[second:second+1], col+second, p[first:first+1], col+first)
}

// parseCapture parses the capture "{name}" or "{name:regex}" at p[i] and
// returns the index just past its "}". Braces within the regex nest, as in
// {id:[0-9]{1,6}}; a backslash escapes the byte after it, and brackets hold
// a class whose braces do not count.
func parseCapture(p string, i, col int) (name, re string, end int, err error) {
	unclosed := fmt.Errorf(`%w: unclosed "{" at column %d; want {name} or {name:regex}`, ErrPattern, col+i)
	j := i + 1
	for j < len(p) && p[j] != '}' && p[j] != ':' && p[j] != '/' {
		j++
	}
	if j == len(p) || p[j] == '/' {
		return "", "", 0, unclosed
	}
	name = p[i+1 : j]
	if !captureName(name) {
		return "", "", 0, fmt.Errorf("%w: capture name %q at column %d; want a letter or _, then letters, digits or _, as in {id}",
			ErrPattern, name, col+i+1)
	}
	if p[j] == '}' {
		return name, "", j + 1, nil
	}
	k, depth, class := j+1, 0, false
	for ; k < len(p); k++ {
		switch c := p[k]; {
		case c == '\\':
			k++
		case class:
			if c == ']' {
				class = false
			}
		case c == '[':
			class = true
			// A ] first in the class, or after ^, is a literal.
			if k+1 < len(p) && p[k+1] == '^' {
				k++
			}
			if k+1 < len(p) && p[k+1] == ']' {
				k++
			}
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		case c == '}':
			re = p[j+1 : k]
			if re == "" {
				return "", "", 0, fmt.Errorf("%w: capture {%s:} at column %d has an empty regex; write {%s} for any text",
					ErrPattern, name, col+i, name)
			}
			if err := checkRegex(re); err != nil {
				return "", "", 0, fmt.Errorf("%w: regex of {%s} at column %d: %v", ErrPattern, name, col+i, err)
			}
			return name, re, k + 1, nil
		case c == '/':
			return "", "", 0, fmt.Errorf(`%w: "/" at column %d in the regex of {%s}; a capture is within one segment, which never holds "/"`,
				ErrPattern, col+k, name)
		}
	}
	return "", "", 0, unclosed
}

func captureName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// checkRegex reports a regex that does not compile, with regexp's own words.
func checkRegex(re string) error {
	_, err := regexp.Compile(re)
	if e, ok := err.(*syntax.Error); ok {
		return fmt.Errorf("%s: %q", e.Code, e.Expr)
	}
	return err
}

// compileRegex compiles a constraint so that it must match the whole
// capture.
func compileRegex(re string) *regexp.Regexp {
	return regexp.MustCompile(`^(?:` + re + `)$`) // checkRegex has passed
}

// byteSet returns the bytes re matches when re is one ASCII class repeated,
// such as [0-9]+, \d+ or [a-z0-9-]*, which covers most constraints: then a
// capture is checked by a table lookup per byte instead of by regexp.
// Captures are never empty, so * and + are the same here.
func byteSet(re string) (*[256]bool, bool) {
	r, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil, false
	}
	r = r.Simplify()
	for r.Op == syntax.OpCapture {
		r = r.Sub[0]
	}
	if (r.Op != syntax.OpPlus && r.Op != syntax.OpStar) || r.Sub[0].Op != syntax.OpCharClass {
		return nil, false
	}
	var set [256]bool
	rs := r.Sub[0].Rune
	for k := 0; k+1 < len(rs); k += 2 {
		if rs[k+1] > 0x7f {
			// A class with non-ASCII runes matches UTF-8 sequences, which
			// bytes cannot tell.
			return nil, false
		}
		for c := rs[k]; c <= rs[k+1]; c++ {
			set[c] = true
		}
	}
	return &set, true
}
