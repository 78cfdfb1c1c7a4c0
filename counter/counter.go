// Package counter turns the operator's counter declarations into a matcher
// that tells, for one log line, which named counters it counts and under
// which key: "show=GET /thumb/{id}.jpg" counts a GET of /thumb/42.jpg under
// key "42" in counter show.
//
// The one idea: every pattern is split at "/" into segments, and all the
// patterns are compiled into one trie of segments, so that a line walks its
// path once, looking each segment up among the literal children of a node
// and then trying the node's few capture children, whatever the number of
// counters. A key is a slice of the path, or of a buffer the caller reuses,
// so matching a line allocates nothing. Counters that count the same lines
// under the same keys end at the same node with the same method and status
// rules: the line matches the first of them alone (Matcher.Same), so that
// whoever counts counts it once.
//
// # Declarations
//
//	--counter 'NAME=METHOD PATTERN [status=FILTER]'
//	--counters FILE
//	--ratio 'NAME=NUMERATOR/DENOMINATOR'
//
// NAME is a lower-case letter followed by lower-case letters, digits or _,
// unique across counters and ratios. METHOD is an upper-case method (GET), a
// comma list of them (GET,HEAD), or * for any. FILTER restricts the status:
// a class (2xx), a code (404), a range (200-299), or a comma list of those
// (2xx,304); without it every status counts. A counters FILE holds one
// counter declaration per line, and "ratio NAME=NUM/DEN" lines for ratios;
// blank lines and lines starting with # are ignored, and " #" starts a
// comment at the end of a line. A ratio divides two counters with the same
// number of captures, key by key.
//
// # Patterns
//
// A pattern matches the path of a request, without its query, as logged
// (percent-escapes are not decoded), byte for byte, in the form the parser
// holds it: a raw byte, a control byte or a backslash is \xHH (see
// logtally.AppendEscaped), so that a key is valid UTF-8 as the path is;
// "/caf\\xE9" is the pattern of the path nginx logs as /caf\xE9. It
// starts with "/"; each segment between slashes is one of:
//
//	thumb         a literal segment
//	{id}          a capture: the whole segment, one byte or more
//	{id}.jpg      a capture within the segment, between a literal prefix
//	              and suffix (p{id}, {id}.jpg, p{id}.jpg)
//	{id:[0-9]+}   a constrained capture: the captured text must match the
//	              regular expression (RE2 syntax) as a whole; it never
//	              contains "/"
//	*  *.jpg      like a capture, but not part of the key
//	**            the rest of the path, zero or more segments; only as the
//	              last segment, and not part of the key
//
// A segment holds at most one capture or *. \{ \} \* and \\ are a literal
// {, }, * and \. A pattern cannot look at the query: "?" is refused.
//
// A counter's key is its captured values joined with "/", in pattern order:
// "GET /forum/{topic}/{msg}" counts /forum/go/42 under "go/42". A counter
// without captures has the key "": it is a plain total. Every counter whose
// pattern, method and status match a line counts it; there is no "most
// specific pattern wins".
//
// # Bounds
//
// Keys come from the outside, so their number has no bound of its own.
// Nothing in this package keeps counts; whoever does (the window, storage)
// keeps at most Config.MaxKeys keys per counter (--max-counter-keys, default
// 100,000) and folds the rest by Space-Saving, as it does for paths: Keys is
// such a table for counts that only grow.
package counter

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Errors of declarations. Each error a Config reports wraps one of them and
// names the flag or the file and line of the declaration, and what to write
// instead.
var (
	// ErrDeclaration means a declaration is not NAME=METHOD PATTERN
	// [status=FILTER] (or NAME=NUM/DEN for a ratio).
	ErrDeclaration = errors.New("bad declaration")
	// ErrName means a counter or ratio name is malformed or already taken.
	ErrName = errors.New("bad name")
	// ErrMethod means a method is not an upper-case word, a comma list of
	// them, or *.
	ErrMethod = errors.New("bad method")
	// ErrPattern means a pattern does not compile.
	ErrPattern = errors.New("bad pattern")
	// ErrStatus means a status filter is not a class, a code, a range, or a
	// comma list of those.
	ErrStatus = errors.New("bad status filter")
	// ErrRatio means a ratio names a counter that is not declared, or two
	// counters whose keys cannot be the same.
	ErrRatio = errors.New("bad ratio")
	// ErrMaxKeys means the bound on keys per counter is not positive.
	ErrMaxKeys = errors.New("bad max counter keys")
	// ErrTooMany means more than MaxCounters counters are declared.
	ErrTooMany = errors.New("too many counters")
)

// MaxCounters is the most counters that can be declared. Counters that
// count the same lines under the same keys are counted once whatever
// their number, but each other one that matches a line costs the line
// about as much again, in its parsing, its batch, and its commit (see
// docs/performance.md).
const MaxCounters = 500

// DefaultMaxKeys is the default bound on keys per counter.
const DefaultMaxKeys = 100_000

// Declaration is one counter or ratio as the operator wrote it.
type Declaration struct {
	Text string // "show=GET /thumb/{id}.jpg", "ctr=click/show"
	// Source is where it was written, which errors name: "--counter",
	// "--ratio", or "FILE:LINE". Empty for a declaration made in code.
	Source string
}

// where names d in an error: the flag and the text, or the file and line.
func (d Declaration) where(kind string) string {
	switch {
	case strings.HasPrefix(d.Source, "--"):
		return fmt.Sprintf("%s %q", d.Source, d.Text)
	case d.Source != "":
		return d.Source
	}
	return fmt.Sprintf("%s %q", kind, d.Text)
}

// Config is the counters and ratios as the operator declares them.
type Config struct {
	// Counters, in order: a counter's index here is its Match.Counter.
	Counters []Declaration
	Ratios   []Declaration
	// MaxKeys is the most keys counted per counter; past it, whoever
	// counts folds the least counted keys (Space-Saving).
	MaxKeys int
}

// DefaultConfig returns the defaults: no counters, DefaultMaxKeys keys.
func DefaultConfig() Config {
	return Config{MaxKeys: DefaultMaxKeys}
}

// AddCounter appends a counter declared in code, as --counter would.
func (c *Config) AddCounter(text string) {
	c.Counters = append(c.Counters, Declaration{Text: text})
}

// AddRatio appends a ratio declared in code, as --ratio would.
func (c *Config) AddRatio(text string) {
	c.Ratios = append(c.Ratios, Declaration{Text: text})
}

// RegisterFlags sets c to the defaults and registers the counters' flags on
// fs. --counter and --ratio may be repeated; --counters reads its file when
// the flag is parsed, so that Config holds plain values and Validate reads
// nothing.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.Var((*counterFlag)(&c.Counters), "counter",
		"count the requests matching `NAME=METHOD PATTERN [status=FILTER]` per captured key, e.g. 'show=GET /thumb/{id}.jpg'; repeatable")
	fs.Var((*fileFlag)(c), "counters",
		"read counter declarations from `FILE`, one per line (and 'ratio NAME=NUM/DEN' lines); # starts a comment; repeatable")
	fs.Var((*ratioFlag)(&c.Ratios), "ratio",
		"declare a ratio `NAME=NUMERATOR/DENOMINATOR` of two counters, key by key, e.g. 'ctr=click/show'; repeatable")
	fs.IntVar(&c.MaxKeys, "max-counter-keys", c.MaxKeys,
		"most keys counted per counter; past it the least counted keys are folded (top keys stay right)")
}

// counterFlag is --counter and ratioFlag is --ratio: each use records one
// declaration. Validate checks them all together, so that a ratio may come
// before its counters.
type (
	counterFlag []Declaration
	ratioFlag   []Declaration
)

func (f *counterFlag) String() string { return texts((*[]Declaration)(f)) }
func (f *ratioFlag) String() string   { return texts((*[]Declaration)(f)) }

func (f *counterFlag) Set(s string) error {
	*f = append(*f, Declaration{Text: s, Source: "--counter"})
	return nil
}

func (f *ratioFlag) Set(s string) error {
	*f = append(*f, Declaration{Text: s, Source: "--ratio"})
	return nil
}

func texts(ds *[]Declaration) string {
	if ds == nil {
		return ""
	}
	s := make([]string, len(*ds))
	for i, d := range *ds {
		s[i] = d.Text
	}
	return strings.Join(s, "; ")
}

// fileFlag is --counters: each use reads one file into the Config.
type fileFlag Config

func (f *fileFlag) String() string { return "" }

func (f *fileFlag) Set(name string) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	counters, ratios := ParseFile(name, data)
	f.Counters = append(f.Counters, counters...)
	f.Ratios = append(f.Ratios, ratios...)
	return nil
}

// ParseFile splits a counters file into its declarations: counters, and
// ratios from lines "ratio NAME=NUM/DEN". Each has the Source "NAME:LINE".
// It checks nothing; Validate does, and its errors name the line.
func ParseFile(name string, data []byte) (counters, ratios []Declaration) {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if k := commentStart(line); k >= 0 {
			line = line[:k]
		}
		line = strings.TrimRight(line, " \t")
		t := strings.TrimLeft(line, " \t")
		if t == "" {
			continue
		}
		src := fmt.Sprintf("%s:%d", name, i+1)
		if r, ok := strings.CutPrefix(t, "ratio"); ok && r != "" && (r[0] == ' ' || r[0] == '\t') {
			ratios = append(ratios, Declaration{Text: strings.TrimLeft(r, " \t"), Source: src})
			continue
		}
		// The counter keeps its leading blanks, so that columns in errors
		// are columns of the line.
		counters = append(counters, Declaration{Text: line, Source: src})
	}
	return counters, ratios
}

// commentStart returns where a comment starts in line: a # first on the
// line or after a blank. Patterns hold no blanks, so a # after one is never
// part of a pattern.
func commentStart(line string) int {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' && (strings.TrimLeft(line[:i], " \t") == "" || line[i-1] == ' ' || line[i-1] == '\t') {
			return i
		}
	}
	return -1
}

// Validate reports every declaration that New would refuse, each naming
// where it was declared. It compiles the patterns and throws them away.
func (c *Config) Validate() error {
	_, _, err := c.compile()
	return err
}
