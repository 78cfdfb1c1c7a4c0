package counter

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Counter describes a declared counter.
type Counter struct {
	Name    string
	Methods []string // the methods it counts; nil for any
	Pattern string
	Status  string // the status filter as declared; "" for any status
	// Captures are the names of the pattern's captures, in order: a key
	// is their values joined with "/".
	Captures []string
	Source   string // where it was declared: "--counter", "FILE:LINE" or ""
}

// Ratio describes a declared ratio: the counts of Numerator divided by those
// of Denominator, key by key. Both are names of counters with the same
// number of captures.
type Ratio struct {
	Name        string
	Numerator   string
	Denominator string
	Source      string
}

// compiled is a counter as the matcher needs it.
type compiled struct {
	Counter
	pat    pattern
	status *statusSet // nil for any status
}

// compile parses and checks every declaration; it has no side effects.
func (c *Config) compile() ([]compiled, []Ratio, error) {
	var (
		errs     []error
		counters []compiled
		ratios   []Ratio
		names    = map[string]string{} // name -> where it was declared
	)
	taken := func(name, where string) bool {
		if first, ok := names[name]; ok {
			errs = append(errs, fmt.Errorf("%s: %w: %q is already declared by %s; names are unique across counters and ratios",
				where, ErrName, name, first))
			return true
		}
		names[name] = where
		return false
	}
	for _, d := range c.Counters {
		where := d.where("counter")
		k, err := parseCounter(d.Text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if !taken(k.Name, where) {
			k.Source = d.Source
			counters = append(counters, k)
		}
	}
	for _, d := range c.Ratios {
		where := d.where("ratio")
		r, err := parseRatio(d.Text)
		if err == nil {
			err = checkRatio(r, counters)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if !taken(r.Name, where) {
			r.Source = d.Source
			ratios = append(ratios, r)
		}
	}
	if len(c.Counters) > MaxCounters {
		errs = append(errs, fmt.Errorf("--counter, --counters: %w: %d declared, at most %d: each one that matches a line costs "+
			"that line about as much again (see docs/performance.md); declare fewer, or one with captures for several",
			ErrTooMany, len(c.Counters), MaxCounters))
	}
	if c.MaxKeys < 1 {
		errs = append(errs, fmt.Errorf("--max-counter-keys %d: %w: want at least 1; the default is %d", c.MaxKeys, ErrMaxKeys, DefaultMaxKeys))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return counters, ratios, nil
}

// parseCounter parses "NAME=METHOD PATTERN [status=FILTER]". Columns in its
// errors are columns of text.
func parseCounter(text string) (compiled, error) {
	var k compiled
	name, rest, ok := strings.Cut(text, "=")
	if !ok {
		return k, fmt.Errorf("%w: no \"=\"; want NAME=METHOD PATTERN [status=FILTER], as in show=GET /thumb/{id}.jpg", ErrDeclaration)
	}
	if k.Name = strings.TrimSpace(name); !validName(k.Name) {
		return k, badName(k.Name)
	}
	fields := split(rest, len(name)+1)
	if len(fields) < 2 {
		return k, fmt.Errorf("%w: want METHOD PATTERN after \"%s=\", as in %s=GET /thumb/{id}.jpg", ErrDeclaration, k.Name, k.Name)
	}
	if m := fields[0].s; m != "*" {
		k.Methods = strings.Split(m, ",")
		for _, x := range k.Methods {
			if !method(x) {
				return k, fmt.Errorf("%w: %q at column %d; want an upper-case method such as GET, a list such as GET,HEAD, or * for any",
					ErrMethod, m, fields[0].col)
			}
		}
	}
	k.Pattern = fields[1].s
	var err error
	if k.pat, err = parsePattern(k.Pattern, fields[1].col); err != nil {
		return k, err
	}
	k.Captures = k.pat.captures
	for _, f := range fields[2:] {
		v, ok := strings.CutPrefix(f.s, "status=")
		if !ok || k.status != nil {
			return k, fmt.Errorf("%w: %q at column %d; after the pattern, only status=FILTER, as in status=2xx", ErrDeclaration, f.s, f.col)
		}
		if k.status, err = parseStatus(v); err != nil {
			return k, err
		}
		k.Status = v
	}
	return k, nil
}

// parseRatio parses "NAME=NUM/DEN".
func parseRatio(text string) (Ratio, error) {
	var r Ratio
	name, rest, ok := strings.Cut(text, "=")
	num, den, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return r, fmt.Errorf("%w: want NAME=NUMERATOR/DENOMINATOR, as in ctr=click/show", ErrDeclaration)
	}
	r.Name, r.Numerator, r.Denominator = strings.TrimSpace(name), strings.TrimSpace(num), strings.TrimSpace(den)
	if !validName(r.Name) {
		return r, badName(r.Name)
	}
	return r, nil
}

// checkRatio checks that r divides two declared counters whose keys can be
// equal.
func checkRatio(r Ratio, counters []compiled) error {
	var parts [2]*compiled
	for i, name := range []string{r.Numerator, r.Denominator} {
		k := slices.IndexFunc(counters, func(k compiled) bool { return k.Name == name })
		if k < 0 {
			return fmt.Errorf("%w: %q is not a declared counter; declare it with --counter '%s=METHOD PATTERN'", ErrRatio, name, name)
		}
		parts[i] = &counters[k]
	}
	if n, d := parts[0].Captures, parts[1].Captures; len(n) != len(d) {
		return fmt.Errorf("%w: %s has %d captures (%s) and %s has %d (%s); a ratio divides the counts of equal keys, so both need as many",
			ErrRatio, r.Numerator, len(n), braces(n), r.Denominator, len(d), braces(d))
	}
	return nil
}

func braces(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "{" + strings.Join(names, "}/{") + "}"
}

func validName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c == '_' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func badName(s string) error {
	return fmt.Errorf("%w: %q; want a lower-case letter, then lower-case letters, digits or _, as in show or add_to_cart", ErrName, s)
}

func method(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// field is a blank-separated word of a declaration and its column.
type field struct {
	s   string
	col int
}

// split splits s, which starts at offset off of its declaration, at blanks.
func split(s string, off int) []field {
	var fs []field
	for i := 0; i < len(s); {
		if s[i] == ' ' || s[i] == '\t' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' {
			j++
		}
		fs = append(fs, field{s[i:j], off + i + 1})
		i = j
	}
	return fs
}

// statusSet holds one bit per status code 0-639.
type statusSet [10]uint64

func (s *statusSet) has(code int) bool {
	return uint(code) < 640 && s[code>>6]&(1<<(code&63)) != 0
}

// parseStatus parses a status filter: 2xx, 404, 200-299, or a comma list.
func parseStatus(v string) (*statusSet, error) {
	bad := func() error {
		return fmt.Errorf("%w: %q; want a class (2xx), a code (404), a range (200-299) or a comma list of them (2xx,304), within 100-599",
			ErrStatus, v)
	}
	var s statusSet
	for _, part := range strings.Split(v, ",") {
		lo, hi := 0, 0
		if len(part) == 3 && part[1:] == "xx" && '1' <= part[0] && part[0] <= '5' {
			lo = int(part[0]-'0') * 100
			hi = lo + 99
		} else {
			a, b, isRange := strings.Cut(part, "-")
			var err1, err2 error
			lo, err1 = strconv.Atoi(a)
			hi, err2 = lo, nil
			if isRange {
				hi, err2 = strconv.Atoi(b)
			}
			if err1 != nil || err2 != nil || len(a) != 3 || isRange && len(b) != 3 || lo < 100 || hi > 599 || lo > hi {
				return nil, bad()
			}
		}
		for c := lo; c <= hi; c++ {
			s[c>>6] |= 1 << (c & 63)
		}
	}
	return &s, nil
}
