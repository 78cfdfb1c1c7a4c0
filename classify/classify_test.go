package classify

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/parser"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// mustNew compiles cfg with a fixed key, failing the test on an error.
func mustNew(t testing.TB, cfg Config) *Classifier {
	t.Helper()
	c, err := New(cfg, Fixed{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClassify(t *testing.T) {
	rules := mustNew(t, DefaultConfig())
	rec := func(method, path string, status int, ua string) *parser.Record {
		return &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte(method),
			Path: []byte(path), Status: status, UserAgent: []byte(ua)}
	}
	const browser = "Mozilla/5.0 (Windows NT 10.0) Firefox/120.0"
	tests := []struct {
		name string
		rec  *parser.Record
		want bool
	}{
		{"page", rec("GET", "/blog/post", 200, browser), true},
		{"redirect", rec("GET", "/old", 301, browser), true},
		{"dotted page", rec("GET", "/v1.2/notes", 200, browser), true},
		{"not found", rec("GET", "/missing", 404, browser), false},
		{"post", rec("POST", "/login", 200, browser), false},
		{"asset", rec("GET", "/static/app.CSS", 200, browser), false},
		{"image", rec("GET", "/img/logo.png", 200, browser), false},
		{"crawler", rec("GET", "/", 200, "Mozilla/5.0 (compatible; Googlebot/2.1)"), false},
		{"curl", rec("GET", "/", 200, "curl/8.5.0"), false},
		{"no agent", rec("GET", "/", 200, "-"), false},
		{"long agent", rec("GET", "/", 200, strings.Repeat("Mozilla ", 100)), true},
		{"long crawler", rec("GET", "/", 200, strings.Repeat("Mozilla ", 100)+"SpiderX"), false},
		{"feed", rec("GET", "/feed/", 200, browser), false},
		{"feed reader", rec("GET", "/", 200, "UniversalFeedParser/4.2-pre-314-svn +http://feedparser.org/"), false},
		{"feed reader by the list", rec("GET", "/", 200, "Tiny Tiny RSS/1.11 (http://tt-rss.org/)"), false},
		{"script", rec("GET", "/", 200, "Java/1.8.0_151"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rules.Classify(tt.rec).PageView; got != tt.want {
				t.Errorf("PageView = %v, want %v", got, tt.want)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.IncludeBots = true
	if !mustNew(t, cfg).Classify(rec("GET", "/", 200, "Googlebot")).PageView {
		t.Error("IncludeBots: crawler page view not counted")
	}
}

func TestVisitorKey(t *testing.T) {
	a := &parser.Record{Host: []byte("192.0.2.1"), Method: []byte("GET"), Path: []byte("/"), Status: 200, UserAgent: []byte("Firefox")}
	b := *a
	b.UserAgent = []byte("Chrome")
	for _, tt := range []struct {
		key  string
		same bool
	}{{KeyHost, true}, {KeyHostUA, false}} {
		cfg := DefaultConfig()
		cfg.VisitorKey = tt.key
		r := mustNew(t, cfg)
		if got := r.Classify(a).Visitor == r.Classify(&b).Visitor; got != tt.same {
			t.Errorf("%s: same visitor = %v, want %v", tt.key, got, tt.same)
		}
	}
}

func TestFlags(t *testing.T) {
	browser := []byte("Mozilla/5.0 Firefox/120.0")
	rec := func(method, path string, status int, ua []byte) *parser.Record {
		return &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte(method), Path: []byte(path),
			Status: status, UserAgent: ua}
	}
	recQ := func(method, path, query string, ua []byte) *parser.Record {
		r := rec(method, path, 200, ua)
		r.Query = []byte(query)
		return r
	}
	tests := []struct {
		name string
		args []string
		rec  *parser.Record
		want bool
	}{
		{"defaults", nil, rec("GET", "/a", 200, browser), true},
		{"HEAD by default", nil, rec("HEAD", "/a", 200, browser), false},
		{"HEAD allowed", []string{"--pageview-methods", "GET, HEAD"}, rec("HEAD", "/a", 200, browser), true},
		{"status range", []string{"--pageview-status", "200-299"}, rec("GET", "/a", 301, browser), false},
		{"asset list replaced", []string{"--asset-exts", "PHP"}, rec("GET", "/x.php", 200, browser), false},
		{"css no longer an asset", []string{"--asset-exts", "php"}, rec("GET", "/x.css", 200, browser), true},
		{"curl by the list", nil, rec("GET", "/a", 200, []byte("curl/8")), false},
		{"bot agent added", []string{"--bot-agents", "Firefox"}, rec("GET", "/a", 200, browser), false},
		{"list kept beside", []string{"--bot-agents", "Firefox"}, rec("GET", "/a", 200, []byte("curl/8")), false},
		{"no list", []string{"--bot-list", "none", "--bot-agents", "firefox"}, rec("GET", "/a", 200, []byte("curl/8")), true},
		{"no list, own tokens", []string{"--bot-list", "none", "--bot-agents", "firefox"}, rec("GET", "/a", 200, browser), false},
		{"empty agent still a bot", []string{"--bot-list", "none"}, rec("GET", "/a", 200, []byte("-")), false},
		{"person agent", []string{"--person-agents", "CURL/"}, rec("GET", "/a", 200, []byte("curl/8")), true},
		{"person agent over bot agent", []string{"--person-agents", "firefox", "--bot-agents", "firefox"}, rec("GET", "/a", 200, browser), true},
		{"include bots", []string{"--include-bots"}, rec("GET", "/a", 200, []byte("-")), true},
		{"include feed readers", []string{"--include-bots"}, rec("GET", "/a", 200, []byte("Feedbin - 1 subscribers")), true},
		{"feed", nil, rec("GET", "/feed/", 200, browser), false},
		{"feed, bots included", []string{"--include-bots"}, rec("GET", "/feed/", 200, browser), false},
		{"feeds are pages", []string{"--feed-paths", ""}, rec("GET", "/feed/", 200, browser), true},
		{"own feed rule", []string{"--feed-paths", "?output=rss"}, rec("GET", "/feed/", 200, browser), true},
		{"own feed rule applies", []string{"--feed-paths", "?output=rss"}, recQ("GET", "/", "output=RSS", browser), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			cfg.RegisterFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if got := mustNew(t, cfg).Classify(tt.rec).PageView; got != tt.want {
				t.Errorf("PageView = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, args := range [][]string{
		{"--visitor-key", "ip"},
		{"--pageview-status", "399-200"},
		{"--pageview-methods", ""},
		{"--bot-list", "crawler-user-agents"},
		{"--feed-paths", "feed,/feed/"},
		{"--feed-paths", "?"},
		{"--feed-paths", "?a=b=c"},
		{"--feed-paths", "."},
	} {
		var cfg Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg.RegisterFlags(fs)
		err := fs.Parse(args)
		if err == nil {
			_, err = New(cfg, Fixed{})
		}
		if err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var cfg Config
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"--pageview-status", "2xx"}); err == nil {
		t.Error("--pageview-status 2xx: no error")
	}
}

func TestClassifyDoesNotAllocate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.VisitorKey = KeyHostUA
	r := mustNew(t, cfg)
	rec := &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte("GET"), Path: []byte("/Blog/Post.HTML"),
		Status: 200, UserAgent: []byte("Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0")}
	if n := testing.AllocsPerRun(100, func() { r.Classify(rec) }); n != 0 {
		t.Errorf("Classify: %v allocs, want 0", n)
	}
}

// BenchmarkClassify is the cost of the page-view rules for a browser's page
// view, the common and slowest case: every bot token is searched for.
func BenchmarkClassify(b *testing.B) {
	r := mustNew(b, DefaultConfig())
	rec := &parser.Record{Host: []byte("203.0.113.77"), Time: t0, Method: []byte("GET"), Path: []byte("/blog/2026/11/a-post"),
		Status: 200, UserAgent: []byte("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")}
	b.ReportAllocs()
	for range b.N {
		r.Classify(rec)
	}
}

// TestClassifyCarriesStatusAndBytes checks that a Hit keeps what storage
// counts of every request, page view or not.
func TestClassifyCarriesStatusAndBytes(t *testing.T) {
	r := mustNew(t, DefaultConfig())
	rec := &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte("GET"), Path: []byte("/x.css"),
		Status: 304, Bytes: 1234, UserAgent: []byte("Firefox")}
	h := r.Classify(rec)
	if h.Status != 304 || h.Bytes != 1234 || h.Time != t0.Unix() || string(h.Path) != "/x.css" || h.PageView {
		t.Errorf("Classify = %+v", h)
	}
}

// FuzzClassify feeds arbitrary fields through the default rules: no panic,
// and a page view always meets every rule, a visitor only with a page view.
func FuzzClassify(f *testing.F) {
	f.Add("GET", "/blog/post", 200, "Mozilla/5.0 Firefox/120.0", "192.0.2.1")
	f.Add("GET", "/a.CSS", 200, "Mozilla", "::1")
	f.Add("HEAD", "/", 301, "-", "")
	f.Add("GET", "/.", 399, strings.Repeat("x", 600)+"bot", "h")
	r := mustNew(f, DefaultConfig())
	f.Fuzz(func(t *testing.T, method, path string, status int, ua, host string) {
		rec := &parser.Record{Host: []byte(host), Time: t0, Method: []byte(method), Path: []byte(path),
			Status: status, UserAgent: []byte(ua)}
		h := r.Classify(rec)
		if h.PageView && (method != "GET" || status < 200 || status > 399 || ua == "" || ua == "-") {
			t.Errorf("page view for %q %q %d %q", method, path, status, ua)
		}
		if !h.PageView && h.Visitor != 0 {
			t.Errorf("visitor %x without a page view", h.Visitor)
		}
	})
}

// TestFormatWithoutUserAgent: with `--format common` no line has an agent;
// taking the missing agent for a crawler's would count no page view at all.
func TestFormatWithoutUserAgent(t *testing.T) {
	common, err := parser.Config{Format: "common"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if common.HasUserAgent() {
		t.Fatal("common has a user agent?")
	}
	var rec parser.Record
	if err := common.Parse([]byte(`192.0.2.1 - - [21/Nov/2026:12:00:00 +0000] "GET /blog/post HTTP/1.1" 200 512`), &rec); err != nil {
		t.Fatal(err)
	}
	if mustNew(t, DefaultConfig()).Classify(&rec).PageView {
		t.Fatal("the rule for formats with an agent should count an empty agent as a crawler")
	}
	cfg := DefaultConfig()
	cfg.NoUserAgent = true
	if h := mustNew(t, cfg).Classify(&rec); !h.PageView || h.Visitor == 0 {
		t.Errorf("common: %+v, want a page view with a visitor", h)
	}
	rec.Path = []byte("/app.js") // the other rules still hold
	if mustNew(t, cfg).Classify(&rec).PageView {
		t.Error("common: an asset counted as a page view")
	}
	combined, _ := parser.Config{Format: "combined"}.Compile()
	if !combined.HasUserAgent() {
		t.Error("combined has no user agent?")
	}
}

// BenchmarkClassifyMemo is BenchmarkClassify with the agent's verdict
// remembered, as ingest's workers classify.
func BenchmarkClassifyMemo(b *testing.B) {
	r := mustNew(b, DefaultConfig())
	rec := &parser.Record{Host: []byte("203.0.113.77"), Time: t0, Method: []byte("GET"), Path: []byte("/blog/2026/11/a-post"),
		Status: 200, UserAgent: []byte("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")}
	var memo Memo
	b.ReportAllocs()
	for range b.N {
		r.ClassifyWith(rec, &memo)
	}
}

// TestMemoAgreesWithClassify: with or without a memo, and with a memo
// that fills and starts again, every agent gets the same verdict.
func TestMemoAgreesWithClassify(t *testing.T) {
	r := mustNew(t, DefaultConfig())
	var memo Memo
	agents := []string{"Mozilla/5.0 Firefox/133.0", "Googlebot/2.1", "-", "", "curl/8.5.0", "Mozilla/5.0 (compatible; bingbot/2.0)",
		strings.Repeat("Mozilla ", 100), strings.Repeat("Mozilla ", 100) + "Googlebot"}
	for i := range 3 * memoSize {
		agents = append(agents, fmt.Sprintf("agent %d", i), fmt.Sprintf("crawler %d bot", i))
	}
	for round := range 2 {
		for _, ua := range agents {
			rec := &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte("GET"), Path: []byte("/a"), Status: 200,
				UserAgent: []byte(ua)}
			if got, want := r.ClassifyWith(rec, &memo), r.Classify(rec); got.PageView != want.PageView || got.Visitor != want.Visitor {
				t.Fatalf("round %d, agent %q: with a memo %+v, without %+v", round, ua, got, want)
			}
		}
	}
	if len(memo.bots) > memoSize || len(memo.older) > memoSize {
		t.Errorf("memo holds %d and %d agents, want at most %d each", len(memo.bots), len(memo.older), memoSize)
	}
	for ua := range memo.bots {
		if len(ua) > memoAgentMax {
			t.Errorf("memo holds an agent of %d bytes", len(ua))
		}
	}
}

// TestMemoTellsAgentsOfOneLengthApart: agents of the same length, people's
// and crawlers' in turn, share the memo's slots kept in place; each keeps
// its own verdict.
func TestMemoTellsAgentsOfOneLengthApart(t *testing.T) {
	r := mustNew(t, DefaultConfig())
	var memo Memo
	views := 0
	for i := range 4 * recentSlots {
		for _, ua := range []string{fmt.Sprintf("Mozilla/%05d", i), fmt.Sprintf("Googlebot%04d", i)} {
			rec := &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte("GET"), Path: []byte("/a"), Status: 200,
				UserAgent: []byte(ua)}
			got, want := r.ClassifyWith(rec, &memo), r.Classify(rec)
			if got.PageView != want.PageView {
				t.Fatalf("agent %q: page view %v with a memo, %v without", ua, got.PageView, want.PageView)
			}
			if want.PageView {
				views++
			}
		}
	}
	if views != 4*recentSlots {
		t.Fatalf("%d page views of %d agents, want half: the agents do not test both verdicts", views, 8*recentSlots)
	}
}

// TestVisitorIsSipHash pins the visitor hash to SipHash-2-4 under the
// day's key, with the reference vector of the SipHash paper (key 00..0f,
// message 00..0e): a change of the hash would split every stored day's
// visitors in two.
func TestVisitorIsSipHash(t *testing.T) {
	r, err := New(DefaultConfig(), Fixed{0x0706050403020100, 0x0f0e0d0c0b0a0908})
	if err != nil {
		t.Fatal(err)
	}
	host := make([]byte, 15)
	for i := range host {
		host[i] = byte(i)
	}
	if got, want := r.Visitor(&parser.Record{Host: host, Time: t0}), uint64(0xa129ca6149be45e5); got != want {
		t.Errorf("Visitor = %#x, want %#x", got, want)
	}
}

// dayKeys gives each day (of 86400 seconds from the epoch) a key of its
// own.
type dayKeys struct{}

func (dayKeys) At(t int64) (k0, k1 uint64) { return uint64(t / 86400), 42 }

// TestVisitorFollowsTheDayKey: one address is one visitor within a day and
// another on the next day, whose key is another; with the agent, two
// agents of one address are two visitors.
func TestVisitorFollowsTheDayKey(t *testing.T) {
	for _, key := range []string{KeyHost, KeyHostUA} {
		cfg := DefaultConfig()
		cfg.VisitorKey = key
		r, err := New(cfg, dayKeys{})
		if err != nil {
			t.Fatal(err)
		}
		at := func(host, ua string, d time.Duration) uint64 {
			return r.Visitor(&parser.Record{Host: []byte(host), UserAgent: []byte(ua), Time: t0.Add(d)})
		}
		if at("192.0.2.1", "Firefox", 0) != at("192.0.2.1", "Firefox", time.Minute) {
			t.Errorf("%s: one address, one day: two visitors", key)
		}
		if at("192.0.2.1", "Firefox", 0) == at("192.0.2.1", "Firefox", 24*time.Hour) {
			t.Errorf("%s: one address on two days: one hash", key)
		}
		if at("192.0.2.1", "Firefox", 0) == at("192.0.2.2", "Firefox", 0) {
			t.Errorf("%s: two addresses: one hash", key)
		}
		if got := at("192.0.2.1", "Firefox", 0) != at("192.0.2.1", "Chrome", 0); got != (key == KeyHostUA) {
			t.Errorf("%s: two agents of one address are two visitors: %v", key, got)
		}
	}
}
