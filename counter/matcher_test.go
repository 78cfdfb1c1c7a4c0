package counter

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// mustNew compiles the counter declarations, failing the test on an error.
func mustNew(t testing.TB, decls ...string) *Matcher {
	t.Helper()
	var cfg Config = DefaultConfig()
	for _, d := range decls {
		cfg.AddCounter(d)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// matches returns what m matches for a request, as "name=key" strings.
func matches(m *Matcher, method, path string, status int) []string {
	var out []string
	for _, mt := range m.Match([]byte(method), []byte(path), status, nil) {
		out = append(out, m.counters[mt.Counter].Name+"="+string(mt.Key))
	}
	return out
}

func TestMatch(t *testing.T) {
	type req struct {
		method, path string
		status       int
		want         []string // "name=key" in declaration order; nil for no match
	}
	get := func(path string, want ...string) req { return req{"GET", path, 200, want} }
	tests := []struct {
		name  string
		decls []string
		reqs  []req
	}{
		{"literal", []string{"about=GET /about/team"}, []req{
			get("/about/team", "about="),
			get("/about/team/"),
			get("/about"),
			get("/about/teams"),
			get("/About/team"),
		}},
		{"root", []string{"home=GET /"}, []req{
			get("/", "home="),
			get("/x"),
			get("//"),
		}},
		{"trailing slash", []string{"forum=GET /forum/"}, []req{
			get("/forum/", "forum="),
			get("/forum"),
		}},
		{"empty segment", []string{"odd=GET /a//b"}, []req{
			get("/a//b", "odd="),
			get("/a/b"),
		}},
		{"whole-segment capture", []string{"click=GET /watch/{id}"}, []req{
			get("/watch/abc", "click=abc"),
			get("/watch/a.b-c%20d", "click=a.b-c%20d"),
			get("/watch/"),
			get("/watch"),
			get("/watch/a/b"),
		}},
		{"capture before suffix", []string{"show=GET /thumb/{id}.jpg"}, []req{
			get("/thumb/42.jpg", "show=42"),
			get("/thumb/a.jpg.jpg", "show=a.jpg"),
			get("/thumb/.jpg"),
			get("/thumb/42.png"),
			get("/thumb/42.jpg/x"),
		}},
		{"capture after prefix", []string{"user=GET /u/@{name}"}, []req{
			get("/u/@bob", "user=bob"),
			get("/u/@"),
			get("/u/bob"),
		}},
		{"capture between prefix and suffix", []string{"img=GET /img/p{id}.png"}, []req{
			get("/img/p7.png", "img=7"),
			get("/img/pp.png", "img=p"),
			get("/img/p.png"),
			get("/img/x7.png"),
		}},
		{"constrained capture", []string{"read=GET /forum/{topic}/{msg:[0-9]+}"}, []req{
			get("/forum/go/42", "read=go/42"),
			get("/forum/go/4x2"),
			get("/forum/go/"),
			get("/forum/go/٤٢"), // Arabic-Indic digits are not [0-9]
		}},
		{"constraint as a regexp", []string{"api=GET /api/{v:v[0-9]+|latest}/{op}"}, []req{
			get("/api/v2/list", "api=v2/list"),
			get("/api/latest/list", "api=latest/list"),
			get("/api/v2latest/list"),
			get("/api/vx/list"),
		}},
		{"constraint with braces and a class", []string{"year=GET /y/{y:[0-9]{4}}/{s:[}{]+}"}, []req{
			get("/y/2026/{}", "year=2026/{}"),
			get("/y/226/{}"),
		}},
		{"constraint on part of a segment", []string{"page=GET /list/page-{n:\\d+}.html"}, []req{
			get("/list/page-3.html", "page=3"),
			get("/list/page-x.html"),
		}},
		{"case-insensitive constraint", []string{"hex=GET /c/{h:(?i)[0-9a-f]+}"}, []req{
			get("/c/BEEF", "hex=BEEF"),
			get("/c/beeg"),
		}},
		{"non-ASCII constraint", []string{"word=GET /w/{w:\\pL+}"}, []req{
			get("/w/café", "word=café"),
			get("/w/caf3"),
		}},
		{"rest", []string{"api=* /api/**"}, []req{
			get("/api", "api="),
			get("/api/", "api="),
			get("/api/v1/users/7", "api="),
			get("/apix"),
			get("/"),
		}},
		{"rest at the root", []string{"all=* /**"}, []req{
			get("/", "all="),
			get("/a/b", "all="),
			get("a/b"),
			get(""),
		}},
		{"capture then rest", []string{"user=GET /u/{user}/**"}, []req{
			get("/u/bob", "user=bob"),
			get("/u/bob/photos/1", "user=bob"),
			get("/u/"),
		}},
		{"star", []string{"msg=GET /forum/*/{msg}", "png=GET /img/*.png"}, []req{
			get("/forum/go/42", "msg=42"),
			get("/forum//42"),
			get("/img/a.png", "png="),
			get("/img/.png"),
		}},
		{"escapes", []string{`brace=GET /a/\{x\}`, `star=GET /s/\*`, `back=GET /b/\\`, `stars=GET /t/\*\*`}, []req{
			get("/a/{x}", "brace="),
			get("/a/x"),
			get("/s/*", "star="),
			get("/s/x"),
			get(`/b/\`, "back="),
			get("/t/**", "stars="),
			get("/t/x"),
		}},
		{"a path's escaped bytes", []string{`raw=GET /p/caf\\xE9`, `key=GET /q/{id}`}, []req{
			// The parser holds a raw byte, a control byte or a backslash of
			// a path as \xHH: a pattern matches that text, and a key holds it.
			get(`/p/caf\xE9`, "raw="),
			get("/p/caf\xe9"),
			get(`/q/caf\xE9\x00`, `key=caf\xE9\x00`),
			get(`/q/a\x5Cb`, `key=a\x5Cb`),
		}},
		{"escape next to a capture", []string{`tpl=GET /t/\{{name}\}`}, []req{
			get("/t/{x}", "tpl=x"),
			get("/t/x"),
		}},
		{"method", []string{"get=GET /x", "any=* /x", "read=GET,HEAD /x"}, []req{
			{"GET", "/x", 200, []string{"get=", "any=", "read="}},
			{"HEAD", "/x", 200, []string{"any=", "read="}},
			{"POST", "/x", 200, []string{"any="}},
			{"", "/x", 200, []string{"any="}},
		}},
		{"status", []string{"ok=* /x status=2xx", "nf=* /x status=404", "r=* /x status=200-299,304", "all=* /x"}, []req{
			{"GET", "/x", 200, []string{"ok=", "r=", "all="}},
			{"GET", "/x", 299, []string{"ok=", "r=", "all="}},
			{"GET", "/x", 304, []string{"r=", "all="}},
			{"GET", "/x", 404, []string{"nf=", "all="}},
			{"GET", "/x", 0, []string{"all="}}, // a format without a status
			{"GET", "/x", 700, []string{"all="}},
			{"GET", "/x", -1, []string{"all="}},
		}},
		{"every match counts, in declaration order", []string{
			"any=* /**", "watch=GET /watch/{id}", "new=GET /watch/new", "short=GET /watch/{id:[a-z]+}", "api=* /api/**",
		}, []req{
			get("/watch/new", "any=", "watch=new", "new=", "short=new"),
			get("/watch/42", "any=", "watch=42"),
			get("/api/x", "any=", "api="),
		}},
		{"captures apart are joined", []string{"item=GET /shop/{cat}/item/{id}", "file=GET /f/{a}/v{b:[0-9]+}/{c}"}, []req{
			get("/shop/books/item/42", "item=books/42"),
			get("/f/x/v2/y", "file=x/2/y"),
			get("/f/x/2/y"),
		}},
		{"shared prefixes", []string{"a=GET /p/{x}/a", "b=GET /p/{x}/b", "c=GET /p/{y}/{z}", "d=GET /p/{x:[0-9]+}/a"}, []req{
			get("/p/1/a", "a=1", "c=1/a", "d=1"),
			get("/p/q/b", "b=q", "c=q/b"),
			get("/p/1/c", "c=1/c"),
		}},
		{"no counters", nil, []req{get("/x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustNew(t, tt.decls...)
			for _, r := range tt.reqs {
				if got := matches(m, r.method, r.path, r.status); !slices.Equal(got, r.want) {
					t.Errorf("%s %s %d: got %q, want %q", r.method, r.path, r.status, got, r.want)
				}
			}
		})
	}
}

// TestMatchManyLiterals checks the map that a node with many literal
// children uses, against the scan of a node with few.
func TestMatchManyLiterals(t *testing.T) {
	for _, n := range []int{linearLits, linearLits + 1, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var decls []string
			for i := range n {
				decls = append(decls, fmt.Sprintf("c%d=GET /s%d/{id}", i, i))
			}
			m := mustNew(t, decls...)
			if (m.root.byLit != nil) != (n > linearLits) {
				t.Errorf("%d literals: map = %v", n, m.root.byLit != nil)
			}
			for i := range n {
				want := []string{fmt.Sprintf("c%d=x%d", i, i)}
				if got := matches(m, "GET", fmt.Sprintf("/s%d/x%d", i, i), 200); !slices.Equal(got, want) {
					t.Errorf("got %q, want %q", got, want)
				}
			}
			if got := matches(m, "GET", "/s/x", 200); got != nil {
				t.Errorf("/s/x: got %q, want nothing", got)
			}
		})
	}
}

// inside reports whether b's bytes lie within s's.
func inside(b, s []byte) bool {
	if len(b) == 0 || len(s) == 0 {
		return len(b) == 0
	}
	lo, hi := uintptr(unsafe.Pointer(&s[0])), uintptr(unsafe.Pointer(&s[len(s)-1]))
	return lo <= uintptr(unsafe.Pointer(&b[0])) && uintptr(unsafe.Pointer(&b[len(b)-1])) <= hi
}

func TestMatchKeyStorage(t *testing.T) {
	m := mustNew(t, "one=GET /a/{x}.jpg", "two=GET /b/{x}/{y}", "apart=GET /c/{x}/c/{y}")
	dst := make([]Match, 0, 4)
	for _, tt := range []struct {
		path    string
		want    string
		aliases bool
	}{
		{"/a/12.jpg", "12", true},
		{"/b/x/y", "x/y", true},
		{"/c/x/c/y", "x/y", false},
		{"/c/longer/c/keys", "longer/keys", false},
		{"/c/x/c/y", "x/y", false},
	} {
		path := []byte(tt.path)
		dst = m.Match([]byte("GET"), path, 200, dst[:0])
		if len(dst) != 1 || string(dst[0].Key) != tt.want {
			t.Fatalf("%s: got %v, want key %q", tt.path, dst, tt.want)
		}
		if got := inside(dst[0].Key, path); got != tt.aliases {
			t.Errorf("%s: key aliases the path = %v, want %v", tt.path, got, tt.aliases)
		}
		if cap(dst[0].Key) != len(dst[0].Key) && tt.aliases {
			t.Errorf("%s: a key aliasing the path has room to append over it", tt.path)
		}
	}
}

func TestMatchAllocs(t *testing.T) {
	m := mustNew(t,
		"show=GET /thumb/{id}.jpg status=2xx",
		"click=GET /watch/{id}",
		"read=GET /forum/{topic}/{msg:[0-9]{1,9}}",
		"item=GET /shop/{cat}/item/{id:[0-9]+}",
		"api=* /api/**",
	)
	paths := [][]byte{
		[]byte("/thumb/123.jpg"), []byte("/watch/123"), []byte("/forum/go/77"),
		[]byte("/shop/books/item/42"), []byte("/api/v1/x"), []byte("/nothing/here"),
	}
	dst := make([]Match, 0, 8)
	method := []byte("GET")
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		for _, p := range paths {
			dst = m.Match(method, p, 200, dst[:0])
			n += len(dst)
		}
	})
	if allocs != 0 {
		t.Errorf("Match allocates %v times per run, want 0", allocs)
	}
	if n == 0 {
		t.Error("nothing matched")
	}
}

func TestMatchConcurrent(t *testing.T) {
	m := mustNew(t, "show=GET /thumb/{id}.jpg", "item=GET /shop/{cat}/item/{id}", "api=* /api/**")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var dst []Match
			for i := range 1000 {
				path := fmt.Sprintf("/shop/c%d/item/%d", g, i)
				dst = m.Match([]byte("GET"), []byte(path), 200, dst[:0])
				if want := fmt.Sprintf("c%d/%d", g, i); len(dst) != 1 || string(dst[0].Key) != want {
					t.Errorf("%s: got %v, want key %q", path, dst, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestMatchAppends(t *testing.T) {
	m := mustNew(t, "a=GET /x/{k}", "b=* /**")
	prev := []Match{{Counter: 7, Key: []byte("kept")}}
	got := m.Match([]byte("GET"), []byte("/x/1"), 200, prev)
	if len(got) != 3 || got[0].Counter != 7 || string(got[0].Key) != "kept" ||
		got[1].Counter != 0 || string(got[1].Key) != "1" || got[2].Counter != 1 {
		t.Errorf("got %v", got)
	}
}

func TestByteSet(t *testing.T) {
	for _, tt := range []struct {
		re   string
		fast bool
	}{
		{"[0-9]+", true},
		{`\d+`, true},
		{"[a-z0-9-]*", true},
		{"(?i)[a-f]+", true},
		{"([0-9]+)", true},
		{`\w+`, true},
		{"[0-9]{1,6}", false},
		{"a|b", false},
		{`\pL+`, false},
		{"[^0-9]+", false}, // holds every non-ASCII rune
		{".+", false},
	} {
		if _, got := byteSet(tt.re); got != tt.fast {
			t.Errorf("byteSet(%q) = %v, want %v", tt.re, got, tt.fast)
		}
	}
}

func TestCountersDescribed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AddCounter("show=GET /thumb/{id}.jpg status=2xx")
	cfg.AddCounter("click=GET,HEAD /watch/{id}")
	cfg.AddCounter("api=* /api/**")
	cfg.AddRatio("ctr=click/show")
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v %+v", m.Counters(), m.Ratios())
	want := "[{Name:show Methods:[GET] Pattern:/thumb/{id}.jpg Status:2xx Captures:[id] Source:} " +
		"{Name:click Methods:[GET HEAD] Pattern:/watch/{id} Status: Captures:[id] Source:} " +
		"{Name:api Methods:[] Pattern:/api/** Status: Captures:[] Source:}] " +
		"[{Name:ctr Numerator:click Denominator:show Source:}]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if i := m.Index("click"); i != 1 {
		t.Errorf("Index(click) = %d, want 1", i)
	}
	if i := m.Index("ctr"); i != -1 {
		t.Errorf("Index(ctr) = %d, want -1", i)
	}
	if !strings.Contains(got, "Methods:[] Pattern:/api/**") || m.Counters()[2].Methods != nil {
		t.Error("a counter of any method has Methods nil")
	}
}

// TestSame: counters of the same method, pattern (whatever the captures'
// names) and status count the same lines under the same keys: Match
// reports the first alone, and Same names it for the others.
func TestSame(t *testing.T) {
	cfg := DefaultConfig()
	for _, d := range []string{"a=GET /t/{id}", "b=GET /t/{x}", "c=HEAD,GET /t/{id}", "d=GET,HEAD /t/{n}",
		"e=GET /t/{id} status=2xx", "f=GET /t/{id} status=200-299", "g=GET /t/*", "h=GET /t/{id:[0-9]+}"} {
		cfg.AddCounter(d)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for i := range m.Counters() {
		got = append(got, m.Same(i))
	}
	if want := []int{0, 0, 2, 2, 4, 4, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("Same = %v, want %v", got, want)
	}
	var counted []int
	for _, mt := range m.Match([]byte("GET"), []byte("/t/7"), 200, nil) {
		counted = append(counted, mt.Counter)
	}
	if want := []int{0, 2, 4, 6, 7}; !slices.Equal(counted, want) {
		t.Errorf("Match counts %v, want %v", counted, want)
	}
}
