package classify

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logtally/logtally/internal/golden"
	"github.com/logtally/logtally/parser"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// beforeConfig is the rules of logtally before the crawler list and the
// feed rule: a short list of substrings, and feeds counted as pages.
func beforeConfig() Config {
	cfg := DefaultConfig()
	cfg.BotList = ListNone
	cfg.BotTokens = strings.Fields("bot crawl spider slurp curl wget python-requests go-http-client headlesschrome uptime monitor pingdom check_http nagios zabbix statuscake site24x7 facebookexternalhit")
	cfg.FeedPaths = nil
	return cfg
}

// readLog returns the lines of a log of testdata, gzipped or not.
func readLog(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	var lines [][]byte
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// tally counts what an agent or a page had before and has now.
type tally map[string]int

func (t tally) top(n int) string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(t[b], t[a]), cmp.Compare(a, b)) })
	var b strings.Builder
	for _, k := range keys[:min(n, len(keys))] {
		fmt.Fprintf(&b, "  %5d  %s\n", t[k], k)
	}
	return b.String()
}

// TestPersonsGolden classifies two logs with the rules of before and the
// default rules, and writes what changed: on a real blog's log of 2015,
// a third of the page views of before were feed readers'. Every page view
// now was one before, the feed fetchers named are crawlers', and no feed
// is a page view.
func TestPersonsGolden(t *testing.T) {
	format, err := parser.Config{Format: "combined"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	before, now := mustNew(t, beforeConfig()), mustNew(t, DefaultConfig())
	named := []string{"UniversalFeedParser", "Tiny Tiny RSS", "FeedBurner", "Feedfetcher-Google", "Feedbin"}
	var out strings.Builder
	for _, name := range []string{"archive-2015.log", "blog-2015.log.gz"} {
		var requests, pvBefore, pvNow, byPath, byAgent int
		newCrawlers, topBefore, topNow := tally{}, tally{}, tally{}
		seen := map[string]int{}
		var memo Memo
		var rec parser.Record
		for _, line := range readLog(t, filepath.Join("..", "testdata", name)) {
			if format.Parse(line, &rec) != nil {
				continue
			}
			requests++
			page := string(rec.Path)
			if len(rec.Query) > 0 {
				page += "?" + string(rec.Query)
			}
			b, n := before.Classify(&rec).PageView, now.ClassifyWith(&rec, &memo).PageView
			if b {
				pvBefore++
				topBefore[page]++
			}
			if n {
				pvNow++
				topNow[page]++
			}
			switch {
			case n && !b:
				t.Errorf("%s: %s: a page view now, not before", name, line)
			case b && !n && now.feeds.feed(rec.Path, rec.Query):
				byPath++
			case b && !n:
				byAgent++
				newCrawlers[string(rec.UserAgent)]++
			}
			if n && now.feeds.feed(rec.Path, rec.Query) {
				t.Errorf("%s: %s: a feed counted as a page view", name, line)
			}
			for _, fetcher := range named {
				if strings.Contains(string(rec.UserAgent), fetcher) {
					seen[fetcher]++
					if !now.agents.bot(rec.UserAgent) {
						t.Errorf("%s: %q is not taken for a crawler", name, rec.UserAgent)
					}
				}
			}
		}
		if name == "blog-2015.log.gz" && len(seen) != len(named) {
			t.Errorf("%s: of the feed fetchers %q, only %v are in the log", name, named, seen)
		}
		fmt.Fprintf(&out, "# testdata/%s\nrequests %d\npage views before %d\npage views now %d\n"+
			"  no longer: a feed by its path %d, a crawler's or feed reader's by its agent %d\n",
			name, requests, pvBefore, pvNow, byPath, byAgent)
		for _, fetcher := range named {
			if seen[fetcher] > 0 {
				fmt.Fprintf(&out, "feed fetcher %s: %d requests, a crawler's\n", fetcher, seen[fetcher])
			}
		}
		fmt.Fprintf(&out, "agents taken for people's before (their page views then):\n%s", newCrawlers.top(20))
		fmt.Fprintf(&out, "top pages before (with their query):\n%s", topBefore.top(5))
		fmt.Fprintf(&out, "top pages now (with their query):\n%s\n", topNow.top(5))
	}
	golden.Check(t, filepath.Join("testdata", "persons.golden"), []byte(out.String()), *update)
}
