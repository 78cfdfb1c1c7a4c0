package breakdown

import (
	"fmt"
	"hash/maphash"
	"strings"
	"testing"

	useragent "github.com/medama-io/go-useragent"
)

func TestParseAgent(t *testing.T) {
	tests := []struct {
		ua   string
		want agent
	}{
		{"", agent{Unknown, Unknown, Unknown}},
		{"-", agent{Unknown, Unknown, Unknown}},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
			agent{"Chrome", "Windows", "desktop"}},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
			agent{"Safari", "MacOS", "desktop"}},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", agent{"Firefox", "Linux", "desktop"}},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
			agent{"Safari", "iOS", "mobile"}},
		{"Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
			agent{"Safari", "iOS", "tablet"}},
		{"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
			agent{"Samsung Browser", "Android", "mobile"}},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0",
			agent{"Edge", "Windows", "desktop"}},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", agent{Unknown, Unknown, "bot"}},
		{"curl/8.5.0", agent{Unknown, Unknown, "bot"}},
		{"UniversalFeedParser/4.2-pre-314-svn +http://feedparser.org/", agent{Unknown, Unknown, Unknown}},
	}
	p := useragent.NewParser()
	for _, tt := range tests {
		t.Run(tt.ua, func(t *testing.T) {
			if got := parseAgent(p, tt.ua); got != tt.want {
				t.Errorf("parseAgent(%q) = %v, want %v", tt.ua, got, tt.want)
			}
		})
	}
}

// TestAgentCache checks that the cache answers as the parser does, keeps
// the agents used lately in a set, and remembers none that is too long.
func TestAgentCache(t *testing.T) {
	p := useragent.NewParser()
	var c agentCache
	chrome := []byte("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	if got, want := c.get(p, chrome), (agent{"Chrome", "Windows", "desktop"}); got != want {
		t.Fatalf("first get = %v, want %v", got, want)
	}
	if got, want := c.get(p, chrome), (agent{"Chrome", "Windows", "desktop"}); got != want {
		t.Fatalf("second get = %v, want %v", got, want)
	}
	if got := c.len(); got != 1 {
		t.Fatalf("len = %d, want 1", got)
	}
	long := []byte(string(chrome) + strings.Repeat(" x", agentMax))
	if got, want := c.get(p, long), (agent{"Chrome", "Windows", "desktop"}); got != want {
		t.Fatalf("long agent = %v, want %v", got, want)
	}
	if got := c.len(); got != 1 {
		t.Errorf("len after a long agent = %d, want 1: it is not remembered", got)
	}

	// Fill chrome's set with other agents, using chrome between each:
	// the one used least lately goes, chrome stays.
	var same [][]byte
	for i := 0; len(same) < agentWays; i++ {
		ua := []byte(fmt.Sprintf("Agent/%d", i))
		if setOf(&c, ua) == setOf(&c, chrome) {
			same = append(same, ua)
		}
	}
	for _, ua := range same {
		c.get(p, ua)
		c.get(p, chrome)
	}
	s := &c.sets[setOf(&c, chrome)]
	if s[0].ua != string(chrome) {
		t.Errorf("chrome is not first in its set: %q", s[0].ua)
	}
	for _, e := range s {
		if e.ua == string(same[0]) {
			t.Errorf("the agent used least lately, %q, is still in the set", same[0])
		}
	}

	// A hit allocates nothing.
	if n := testing.AllocsPerRun(100, func() { c.get(p, chrome) }); n != 0 {
		t.Errorf("a hit allocates %v times", n)
	}
}

// setOf returns the index of the set of c that ua is kept in.
func setOf(c *agentCache, ua []byte) uint64 { return maphash.Bytes(c.seed, ua) % agentSets }

// FuzzAgent checks that whatever an agent holds, the cache answers as the
// parser does, the first time and the next, with keys of the documented
// vocabulary.
func FuzzAgent(f *testing.F) {
	for _, s := range []string{"", "-", "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "\xff\xfe(", strings.Repeat("Chrome/1 ", 80)} {
		f.Add([]byte(s))
	}
	for _, s := range sampleAgents(f)[:50] {
		f.Add([]byte(s))
	}
	p := useragent.NewParser()
	var c agentCache
	f.Fuzz(func(t *testing.T, ua []byte) {
		want := parseAgent(p, string(ua))
		for i := range 2 {
			if got := c.get(p, ua); got != want {
				t.Fatalf("get %d of %q = %v, want %v", i, ua, got, want)
			}
		}
		switch want.device {
		case "desktop", "mobile", "tablet", "tv", "bot", Unknown:
		default:
			t.Fatalf("device of %q = %q", ua, want.device)
		}
		if want.browser == "" || want.os == "" {
			t.Fatalf("agent of %q = %v", ua, want)
		}
	})
}
