package counter

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCounterErrors checks that each bad declaration fails with its
// sentinel, and that the message names the flag, the place and the fix.
func TestCounterErrors(t *testing.T) {
	tests := []struct {
		decl string
		want error
		msg  string // the whole message, or a part of it when it starts with "..."
	}{
		{"show=GET /thumb/{id", ErrPattern,
			`--counter "show=GET /thumb/{id": bad pattern: unclosed "{" at column 17; want {name} or {name:regex}`},
		{"show=GET /thumb/{id/x.jpg", ErrPattern, `...unclosed "{" at column 17`},
		{"show=GET /thumb/{id:[0-9]+", ErrPattern, `...unclosed "{" at column 17`},
		{"show=GET /thumb/{id:[0-9]{2}", ErrPattern, `...unclosed "{" at column 17`},
		{"show=GET /thumb/id}", ErrPattern, `...bad pattern: "}" at column 19 closes nothing; write \} for a literal "}"`},
		{"show=GET /thumb/{}", ErrPattern, `...capture name "" at column 18; want a letter or _`},
		{"show=GET /thumb/{a-b}", ErrPattern, `...capture name "a-b" at column 18`},
		{"show=GET /thumb/{1d}", ErrPattern, `...capture name "1d"`},
		{"show=GET /thumb/{id:}", ErrPattern, `...capture {id:} at column 17 has an empty regex; write {id} for any text`},
		{"show=GET /thumb/{id:[0-9}", ErrPattern, `...unclosed "{" at column 17`}, // the } is in the class
		{"show=GET /thumb/{id:[0-9}]", ErrPattern, `...unclosed "{" at column 17`},
		{"show=GET /thumb/{id:x**}", ErrPattern, "...regex of {id} at column 17: invalid nested repetition operator: \"**\""},
		{"show=GET /thumb/{id:a)}", ErrPattern, "...regex of {id} at column 17: unexpected ): \"a)\""},
		{"show=GET /thumb/{id:a/b}", ErrPattern, `..."/" at column 22 in the regex of {id}; a capture is within one segment`},
		{"show=GET /t/{id}-{n}", ErrPattern,
			`...bad pattern: "{" at column 18 is a second capture in the segment of "{" at column 13; a segment holds one {capture} or *`},
		{"show=GET /t/*{n}", ErrPattern, `..."{" at column 14 is a second capture in the segment of "*" at column 13`},
		{"show=GET /t/{a}/{a}", ErrPattern, `...capture {a} at column 17 is named twice`},
		{"api=* /api/**/x", ErrPattern, `...bad pattern: "**" at column 12 must be the last segment, as in /api/**`},
		{"api=* /api/x**", ErrPattern, `..."**" at column 13 must be a whole segment, as in /api/**; write \* for a literal "*"`},
		{"api=* /api/***", ErrPattern, `..."**" at column 12 must be a whole segment`},
		{"api=* /api/**x", ErrPattern, `..."**" at column 12 must be a whole segment`},
		{`api=* /api/\x`, ErrPattern, `...escape "\\x" at column 12; only \{ \} \* and \\ are escapes`},
		{`api=* /api/\`, ErrPattern, `...escape "\\" at column 12`},
		{"s=GET /search?q={q}", ErrPattern, `..."?" at column 14: a pattern matches the path without its query`},
		{"s=GET search/{q}", ErrPattern, `...bad pattern: "search/{q}" at column 7 does not start with "/"`},
		{"s=GET /" + captures(MaxCaptures+1), ErrPattern,
			"...capture {c16} at column 94 is one too many; a pattern has at most 16 captures"},
		{"show=get /thumb/{id}.jpg", ErrMethod,
			`--counter "show=get /thumb/{id}.jpg": bad method: "get" at column 6; want an upper-case method such as GET, a list such as GET,HEAD, or * for any`},
		{"show=GET, /x", ErrMethod, `..."GET," at column 6`},
		{"show=/thumb/{id}.jpg", ErrDeclaration, `...bad declaration: want METHOD PATTERN after "show=", as in show=GET /thumb/{id}.jpg`},
		{"show GET /thumb/{id}.jpg", ErrDeclaration, `...bad declaration: no "="; want NAME=METHOD PATTERN [status=FILTER]`},
		{"show=GET /x 2xx", ErrDeclaration, `...bad declaration: "2xx" at column 13; after the pattern, only status=FILTER, as in status=2xx`},
		{"show=GET /x status=2xx status=3xx", ErrDeclaration, `..."status=3xx" at column 24`},
		{"Show=GET /x", ErrName, `...bad name: "Show"; want a lower-case letter, then lower-case letters, digits or _`},
		{"=GET /x", ErrName, `...bad name: ""`},
		{"add-to-cart=GET /x", ErrName, `...bad name: "add-to-cart"`},
		{"show=GET /x status=6xx", ErrStatus, `...bad status filter: "6xx"; want a class (2xx), a code (404), a range (200-299)`},
		{"show=GET /x status=", ErrStatus, `...bad status filter: ""`},
		{"show=GET /x status=299-200", ErrStatus, `...bad status filter: "299-200"`},
		{"show=GET /x status=2xx,", ErrStatus, `...bad status filter: "2xx,"`},
		{"show=GET /x status=20", ErrStatus, `...bad status filter: "20"`},
		{"show=GET /x status=+200", ErrStatus, `...bad status filter: "+200"`},
		{"show=GET /x status=099-200", ErrStatus, `...bad status filter: "099-200"`},
	}
	for _, tt := range tests {
		t.Run(tt.decl, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Counters = []Declaration{{Text: tt.decl, Source: "--counter"}}
			err := cfg.Validate()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			checkMessage(t, err, tt.msg)
			if _, err2 := New(cfg); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("New: got %v, want Validate's error", err2)
			}
		})
	}
}

// captures returns n whole-segment captures, {c0}/{c1}/...
func captures(n int) string {
	var s []string
	for i := range n {
		s = append(s, fmt.Sprintf("{c%d}", i))
	}
	return strings.Join(s, "/")
}

func checkMessage(t *testing.T, err error, want string) {
	t.Helper()
	if part, ok := strings.CutPrefix(want, "..."); ok {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("got  %s\nwant ...%s", err, part)
		}
	} else if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestGoodDeclarations(t *testing.T) {
	for _, decl := range []string{
		"show=GET /thumb/{id}.jpg",
		"  show  =  GET   /thumb/{id}.jpg   status=2xx  ",
		"click=GET,HEAD /watch/{id}",
		"read=GET /forum/{topic}/{msg:[0-9]+}",
		"api=* /api/**",
		"home=GET /",
		"all=* /**",
		"s=GET /x status=200",
		"s=GET /x status=200-299",
		"s=GET /x status=1xx,2xx,3xx,4xx,5xx,100-599,404",
		"a_1=GET /x/{_}/{A9}",
		"re=GET /x/{id:[^/]+}",
		"re=GET /x/{id:[\\]}{]+}",
		"re=GET /x/{id:[]a]+}/{b:[^]a]+}/{c:[[:alpha:]]+}",
		`re=GET /x/{id:a\}b}`,
		"s=GET /" + captures(MaxCaptures),
	} {
		cfg := DefaultConfig()
		cfg.AddCounter(decl)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", decl, err)
		}
	}
}

func TestRatioErrors(t *testing.T) {
	counters := []string{"show=GET /thumb/{id}.jpg", "click=GET /watch/{id}", "api=* /api/**", "pair=GET /p/{a}/{b}"}
	tests := []struct {
		ratio string
		want  error
		msg   string
	}{
		{"ctr=click/shows", ErrRatio,
			`--ratio "ctr=click/shows": bad ratio: "shows" is not a declared counter; declare it with --counter 'shows=METHOD PATTERN'`},
		{"ctr=clicks/show", ErrRatio, `..."clicks" is not a declared counter`},
		{"ctr=click/api", ErrRatio,
			`--ratio "ctr=click/api": bad ratio: click has 1 captures ({id}) and api has 0 (none); a ratio divides the counts of equal keys, so both need as many`},
		{"x=pair/click", ErrRatio, `...pair has 2 captures ({a}/{b}) and click has 1 ({id})`},
		{"ctr=click", ErrDeclaration, `--ratio "ctr=click": bad declaration: want NAME=NUMERATOR/DENOMINATOR, as in ctr=click/show`},
		{"click/show", ErrDeclaration, `...want NAME=NUMERATOR/DENOMINATOR`},
		{"CTR=click/show", ErrName, `...bad name: "CTR"`},
		{"show=click/show", ErrName,
			`--ratio "show=click/show": bad name: "show" is already declared by --counter "show=GET /thumb/{id}.jpg"; names are unique across counters and ratios`},
	}
	for _, tt := range tests {
		t.Run(tt.ratio, func(t *testing.T) {
			cfg := DefaultConfig()
			for _, c := range counters {
				cfg.Counters = append(cfg.Counters, Declaration{Text: c, Source: "--counter"})
			}
			cfg.Ratios = []Declaration{{Text: tt.ratio, Source: "--ratio"}}
			err := cfg.Validate()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			checkMessage(t, err, tt.msg)
		})
	}
}

func TestDuplicateNames(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AddCounter("show=GET /a")
	cfg.AddCounter("show=GET /b")
	cfg.AddRatio("r=show/show")
	cfg.AddRatio("r=show/show")
	err := cfg.Validate()
	if !errors.Is(err, ErrName) {
		t.Fatalf("got %v, want ErrName", err)
	}
	want := `counter "show=GET /b": bad name: "show" is already declared by counter "show=GET /a"; names are unique across counters and ratios` + "\n" +
		`ratio "r=show/show": bad name: "r" is already declared by ratio "r=show/show"; names are unique across counters and ratios`
	checkMessage(t, err, want)
}

func TestMaxKeys(t *testing.T) {
	cfg := Config{}
	err := cfg.Validate()
	if !errors.Is(err, ErrMaxKeys) {
		t.Fatalf("got %v, want ErrMaxKeys", err)
	}
	checkMessage(t, err, "--max-counter-keys 0: bad max counter keys: want at least 1; the default is 100000")
}

// TestTooManyCounters: past MaxCounters declarations, Validate refuses
// them all, naming the flags, the limit and the fix; MaxCounters is fine.
func TestTooManyCounters(t *testing.T) {
	cfg := DefaultConfig()
	for i := range MaxCounters {
		cfg.AddCounter(fmt.Sprintf("c%d=GET /c%d/{id}", i, i))
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%d counters: %v", MaxCounters, err)
	}
	cfg.AddCounter("one=GET /more")
	err := cfg.Validate()
	if !errors.Is(err, ErrTooMany) {
		t.Fatalf("got %v, want ErrTooMany", err)
	}
	checkMessage(t, err, "--counter, --counters: too many counters: 501 declared, at most 500: each one that matches a line "+
		"costs that line about as much again (see docs/performance.md); declare fewer, or one with captures for several")
}

// TestValidateReportsAll checks that one Validate reports every bad
// declaration, not only the first.
func TestValidateReportsAll(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Counters = []Declaration{{Text: "a=GET /{", Source: "--counter"}, {Text: "b=get /", Source: "--counter"}}
	cfg.Ratios = []Declaration{{Text: "c=a/b", Source: "--ratio"}}
	err := cfg.Validate()
	for _, want := range []error{ErrPattern, ErrMethod, ErrRatio} {
		if !errors.Is(err, want) {
			t.Errorf("got %v, want it to hold %v", err, want)
		}
	}
}

func TestParseFile(t *testing.T) {
	data, err := os.ReadFile("testdata/counters.txt")
	if err != nil {
		t.Fatal(err)
	}
	counters, ratios := ParseFile("counters.txt", data)
	var got []string
	for _, d := range slices.Concat(counters, ratios) {
		got = append(got, d.Source+" "+d.Text)
	}
	want := []string{
		"counters.txt:4 show=GET /thumb/{id}.jpg status=2xx,304",
		"counters.txt:5 click=GET /watch/{id:[0-9]+}",
		"counters.txt:9 read=GET /forum/{topic}/{msg:[0-9]+}",
		"counters.txt:12 cart=POST /cart/add/{product} status=2xx",
		"counters.txt:13 api=* /api/**",
		"counters.txt:6 ctr=click/show",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	cfg := Config{Counters: counters, Ratios: ratios, MaxKeys: 1}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

func TestParseFileComments(t *testing.T) {
	data := "a=GET /x # a comment\r\n\t# indented comment\r\n  b=GET /y/{z:[#]+}#not-a-comment\n\n" +
		"ratio  r=a/a   # ratio\nratio=GET /ratio\n   \n"
	counters, ratios := ParseFile("f", []byte(data))
	want := []Declaration{
		{Text: "a=GET /x", Source: "f:1"},
		{Text: "  b=GET /y/{z:[#]+}#not-a-comment", Source: "f:3"},
		{Text: "ratio=GET /ratio", Source: "f:6"},
	}
	if !slices.Equal(counters, want) {
		t.Errorf("counters: got %q\nwant %q", counters, want)
	}
	if want := []Declaration{{Text: "r=a/a", Source: "f:5"}}; !slices.Equal(ratios, want) {
		t.Errorf("ratios: got %q, want %q", ratios, want)
	}
}

// TestFileErrors checks that errors in a counters file name the file, the
// line, and the column within the line.
func TestFileErrors(t *testing.T) {
	data, err := os.ReadFile("testdata/bad_counters.txt")
	if err != nil {
		t.Fatal(err)
	}
	counters, ratios := ParseFile("bad_counters.txt", data)
	cfg := Config{Counters: counters, Ratios: ratios, MaxKeys: 1}
	err = cfg.Validate()
	want := `bad_counters.txt:3: bad pattern: unclosed "{" at column 17; want {name} or {name:regex}` + "\n" +
		`bad_counters.txt:4: bad name: "Click"; want a lower-case letter, then lower-case letters, digits or _, as in show or add_to_cart` + "\n" +
		`bad_counters.txt:7: bad name: "ok" is already declared by bad_counters.txt:2; names are unique across counters and ratios` + "\n" +
		`bad_counters.txt:6: bad ratio: "click" is not a declared counter; declare it with --counter 'click=METHOD PATTERN'`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

func TestFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "counters.txt")
	if err := os.WriteFile(file, []byte("click=GET /watch/{id}\nratio ctr=click/show\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	fs := flag.NewFlagSet("logtally", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	if cfg.MaxKeys != DefaultMaxKeys {
		t.Errorf("MaxKeys = %d, want the default %d", cfg.MaxKeys, DefaultMaxKeys)
	}
	err := fs.Parse([]string{
		"--ratio", "rev=show/click", // before the counters it divides
		"--counter", "show=GET /thumb/{id}.jpg status=2xx",
		"--counters", file,
		"--counter", "api=* /api/**",
		"--max-counter-keys", "500",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Counters: []Declaration{
			{Text: "show=GET /thumb/{id}.jpg status=2xx", Source: "--counter"},
			{Text: "click=GET /watch/{id}", Source: file + ":1"},
			{Text: "api=* /api/**", Source: "--counter"},
		},
		Ratios: []Declaration{
			{Text: "rev=show/click", Source: "--ratio"},
			{Text: "ctr=click/show", Source: file + ":2"},
		},
		MaxKeys: 500,
	}
	if !slices.Equal(cfg.Counters, want.Counters) || !slices.Equal(cfg.Ratios, want.Ratios) || cfg.MaxKeys != want.MaxKeys {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := matches(m, "GET", "/watch/7", 200); !slices.Equal(got, []string{"click=7"}) {
		t.Errorf("got %q", got)
	}

	fs = flag.NewFlagSet("logtally", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	missing := filepath.Join(dir, "missing.txt")
	if err := fs.Parse([]string{"--counters", missing}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("--counters %s: got %v, want a not-exist error", missing, err)
	}
}

func TestFlagsHelp(t *testing.T) {
	var cfg Config
	fs := flag.NewFlagSet("logtally", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	cfg.RegisterFlags(fs)
	fs.PrintDefaults()
	for _, want := range []string{
		"-counter NAME=METHOD PATTERN [status=FILTER]",
		"-counters FILE",
		"-ratio NAME=NUMERATOR/DENOMINATOR",
		"-max-counter-keys int",
		"(default 100000)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}
