package classify

import (
	"testing"

	"github.com/logtally/logtally/parser"
)

func TestFeedRules(t *testing.T) {
	f, err := compileFeedRules(DefaultFeedPaths)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, query string
		want        bool
	}{
		{"/feed", "", true},
		{"/feed/", "", true},
		{"/comments/feed/", "", true},
		{"/category/go/feed/atom/", "", true},
		{"/feeds/posts/default", "", true},
		{"/rss/", "", true},
		{"/Blog/RSS", "", true},
		{"/atom.xml", "", true},
		{"/tags/go/index.xml", "", true},
		{"/index.RSS", "", true},
		{"/blog/index.atom", "", true},
		{"/", "flav=rss20", true},
		{"/blog/tags/puppet", "flav=rss20", true},
		{"/", "flav=atom", true},
		{"/", "p=3&feed=rss2", true},
		{"/", "feed", true},
		{"/", "format=RSS", true},
		{"/", "", false},
		{"/blog/feeding-cats", "", false},
		{"/feedback", "", false},
		{"/blog/rss-explained", "", false},
		{"/rss.html/x", "", false},
		{"/", "flav=html", false},
		{"/news/12", "utm_source=feed", false},
		{"/blog/post.html", "utm_source=feedburner&utm_medium=feed&utm_campaign=Feed:+main", false},
		{"/", "flavour=rss20", false},
		{"/", "xfeed=1", false},
	}
	for _, tt := range tests {
		if got := f.feed([]byte(tt.path), []byte(tt.query)); got != tt.want {
			t.Errorf("feed(%q, %q) = %v, want %v", tt.path, tt.query, got, tt.want)
		}
	}
}

func TestFeedRuleForms(t *testing.T) {
	tests := []struct {
		rule, path, query string
		want              bool
	}{
		{"?output=rss", "/", "output=rss", true},
		{"?output=rss", "/", "output=rss2", false},
		{"?output=rss*", "/", "output=rss2", true},
		{"?output", "/", "output=", true},
		{"?output", "/", "output", true},
		{".json", "/feed.JSON", "", true},
		{".json", "/feed.json/", "", true},
		{"podcast", "/a/podcast/ep1", "", true},
	}
	for _, tt := range tests {
		f, err := compileFeedRules([]string{tt.rule})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.feed([]byte(tt.path), []byte(tt.query)); got != tt.want {
			t.Errorf("%s: feed(%q, %q) = %v, want %v", tt.rule, tt.path, tt.query, got, tt.want)
		}
	}
}

func TestFeedDoesNotAllocate(t *testing.T) {
	r := mustNew(t, DefaultConfig())
	rec := &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte("GET"), Path: []byte("/blog/tags/puppet"),
		Query: []byte("utm_source=x&flav=rss20"), Status: 200, UserAgent: []byte("Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0")}
	var memo Memo
	r.ClassifyWith(rec, &memo)
	if n := testing.AllocsPerRun(100, func() { r.ClassifyWith(rec, &memo) }); n != 0 {
		t.Errorf("ClassifyWith: %v allocs, want 0", n)
	}
	if r.Classify(rec).PageView {
		t.Error("a feed counted as a page view")
	}
}

// BenchmarkFeed is the feed rule's cost on a page's path, which every
// line pays.
func BenchmarkFeed(b *testing.B) {
	f, err := compileFeedRules(DefaultFeedPaths)
	if err != nil {
		b.Fatal(err)
	}
	path := []byte("/blog/2026/11/a-post")
	b.ReportAllocs()
	for b.Loop() {
		f.feed(path, nil)
	}
}
