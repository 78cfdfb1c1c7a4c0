package counter

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// naiveMatch is the reference for the trie: it matches one counter the
// obvious way, splitting the path with strings.Split and checking every
// constraint with a regexp of its own, never a byte class.
func naiveMatch(k compiled, method, path string, status int) (string, bool) {
	if !strings.HasPrefix(path, "/") ||
		k.Methods != nil && !slices.Contains(k.Methods, method) ||
		k.status != nil && !k.status.has(status) {
		return "", false
	}
	segs := strings.Split(path[1:], "/")
	var caps []string
	for i, s := range k.pat.segs {
		if s.kind == segRest {
			return strings.Join(caps, "/"), true
		}
		if i >= len(segs) {
			return "", false
		}
		seg := segs[i]
		if s.kind == segLiteral {
			if seg != s.lit {
				return "", false
			}
			continue
		}
		if len(seg) <= len(s.prefix)+len(s.suffix) || !strings.HasPrefix(seg, s.prefix) || !strings.HasSuffix(seg, s.suffix) {
			return "", false
		}
		v := seg[len(s.prefix) : len(seg)-len(s.suffix)]
		if s.re != "" && !regexp.MustCompile(`^(?:`+s.re+`)$`).MatchString(v) {
			return "", false
		}
		if s.name != "" {
			caps = append(caps, v)
		}
	}
	if len(segs) != len(k.pat.segs) {
		return "", false
	}
	return strings.Join(caps, "/"), true
}

// Building blocks of the patterns FuzzMatcher makes, and of the values it
// fills their holes with. X is replaced by a capture name.
var (
	fuzzSegments = []string{
		"a", "b", "ab", "", "{X}", "{X}.jpg", "p{X}", "p{X}.jpg", "*", "*.jpg", "{X:[0-9]+}", "{X:a|b}",
		"{X:[a-z]*}", `{X:\d{1,2}}`, `\*`, `\{`, `a\}`, "{X:[^b]+}", "{X:(?i)A+}", `{X:\pL+}`, "p*", "**",
	}
	fuzzMethods = []string{"*", "GET", "GET,HEAD", "POST"}
	fuzzStatus  = []string{"", " status=2xx", " status=404", " status=200-299,304"}
	fuzzValues  = []string{"1", "12", "a", "b", "ab", "A", "x.jpg", "é", "p", "123", "", "a/b"}
	fuzzVerbs   = []string{"GET", "HEAD", "POST"}
)

// fuzzSpec reads a test case from spec: counter declarations, and for each
// a path made to match it, with a method, whose holes are filled from
// spec too.
func fuzzSpec(spec []byte) (decls, paths, methods []string) {
	next := func() int {
		if len(spec) == 0 {
			return 0
		}
		b := spec[0]
		spec = spec[1:]
		return int(b)
	}
	n := 1 + next()%6
	for c := range n {
		var pat, path strings.Builder
		segs := 1 + next()%4
		for s := range segs {
			tok := fuzzSegments[next()%len(fuzzSegments)]
			if tok == "**" && s != segs-1 {
				tok = "a"
			}
			pat.WriteString("/" + strings.ReplaceAll(tok, "X", fmt.Sprintf("x%d", s)))
			// The path: literal text as it is, a hole filled with a value.
			lit := strings.NewReplacer(`\*`, "*", `\{`, "{", `a\}`, "a}").Replace(tok)
			switch {
			case tok == "**":
				path.WriteString(strings.Repeat("/a", next()%3))
			case strings.ContainsAny(lit, "{*") && !strings.HasPrefix(tok, `\`) && tok != `a\}`:
				open := strings.IndexAny(lit, "{*")
				end := open + 1
				if lit[open] == '{' {
					end = strings.LastIndexByte(lit, '}') + 1
				}
				path.WriteString("/" + lit[:open] + fuzzValues[next()%len(fuzzValues)] + lit[end:])
			default:
				path.WriteString("/" + lit)
			}
		}
		decls = append(decls, fmt.Sprintf("c%d=%s %s%s", c, fuzzMethods[next()%len(fuzzMethods)], pat.String(),
			fuzzStatus[next()%len(fuzzStatus)]))
		if path.Len() == 0 {
			path.WriteString("/")
		}
		paths = append(paths, path.String())
		methods = append(methods, fuzzVerbs[next()%len(fuzzVerbs)])
	}
	return decls, paths, methods
}

// FuzzMatcher compiles random patterns and matches random paths, and checks
// that the trie never panics, agrees with naiveMatch on every counter, and
// makes keys of the path's bytes: aliasing it for a counter with one
// capture, and joining pieces of it otherwise.
func FuzzMatcher(f *testing.F) {
	f.Add([]byte{}, "/", 200)
	f.Add([]byte{3, 1, 5, 0, 1, 0, 2, 0, 1, 2, 3}, "/thumb/42.jpg", 200)
	f.Add([]byte{0, 2, 4, 10, 21, 1, 1, 3}, "/a/b/c", 404)
	f.Add([]byte{5, 3, 4, 4, 4, 4, 0, 0, 3, 1, 2, 3, 17, 17, 2, 0, 3, 9, 10, 11, 12, 1, 2, 3, 0, 6, 7, 8, 9}, "/ab/p1.jpg", 304)
	f.Fuzz(func(t *testing.T, spec []byte, path string, status int) {
		decls, paths, methods := fuzzSpec(spec)
		cfg := DefaultConfig()
		for _, d := range decls {
			cfg.AddCounter(d)
		}
		counters, _, err := cfg.compile()
		if err != nil {
			t.Fatalf("%q: %v", decls, err)
		}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
		methods = append(methods, "GET")
		var dst []Match // reused, as a caller would
		for i, p := range paths {
			pb := []byte(p)
			dst = m.Match([]byte(methods[i]), pb, status, dst[:0])
			var got, want []string
			for _, mt := range dst {
				got = append(got, fmt.Sprintf("%d=%q", mt.Counter, mt.Key))
				caps := counters[mt.Counter].Captures
				switch {
				case len(caps) == 1 && !inside(mt.Key, pb):
					t.Errorf("%s: key %q of c%d does not alias the path", p, mt.Key, mt.Counter)
				case len(caps) > 1:
					for _, piece := range strings.Split(string(mt.Key), "/") {
						if !strings.Contains(p, piece) {
							t.Errorf("%s: key %q of c%d has %q, which the path does not", p, mt.Key, mt.Counter, piece)
						}
					}
				}
			}
			for c, k := range counters {
				key, ok := naiveMatch(k, methods[i], p, status)
				if lead := m.Same(c); lead != c {
					// Counted as lead: it must count the same.
					lkey, lok := naiveMatch(counters[lead], methods[i], p, status)
					if ok != lok || key != lkey {
						t.Errorf("%s %s %d: c%d counts %q %v, but Same says c%d, which counts %q %v",
							methods[i], p, status, c, key, ok, lead, lkey, lok)
					}
					continue
				}
				if ok {
					want = append(want, fmt.Sprintf("%d=%q", c, key))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s %d with %q:\ngot  %v\nwant %v", methods[i], p, status, decls, got, want)
			}
		}
	})
}

// FuzzConfig feeds counters files to Validate and New: they never panic,
// agree, and every error wraps one of the package's sentinels.
func FuzzConfig(f *testing.F) {
	for _, name := range []string{"testdata/counters.txt", "testdata/bad_counters.txt"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("a=GET /{x:[0-9]{1,3}}/{y:[]}{]+}/**\nratio r=a/a")
	f.Fuzz(func(t *testing.T, text string) {
		counters, ratios := ParseFile("f", []byte(text))
		cfg := Config{Counters: counters, Ratios: ratios, MaxKeys: 1}
		err := cfg.Validate()
		m, err2 := New(cfg)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Validate: %v; New: %v", err, err2)
		}
		if err != nil {
			if !slices.ContainsFunc([]error{ErrDeclaration, ErrName, ErrMethod, ErrPattern, ErrStatus, ErrRatio},
				func(e error) bool { return errors.Is(err, e) }) {
				t.Fatalf("%v wraps no sentinel", err)
			}
			return
		}
		if len(m.Counters()) != len(counters) || len(m.Ratios()) != len(ratios) {
			t.Fatalf("%d counters and %d ratios, want %d and %d", len(m.Counters()), len(m.Ratios()), len(counters), len(ratios))
		}
		for _, c := range m.Counters() {
			m.Match([]byte("GET"), []byte(c.Pattern), 200, nil)
		}
	})
}
