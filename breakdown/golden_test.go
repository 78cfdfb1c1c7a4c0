package breakdown

import (
	"cmp"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logtally/logtally/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// counts is how many lines had each key.
type counts map[string]int

// top writes the n keys with the most lines, and what the rest add up to.
func (c counts) top(b *strings.Builder, n int) {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int { return cmp.Or(cmp.Compare(c[y], c[x]), cmp.Compare(x, y)) })
	for _, k := range keys[:min(n, len(keys))] {
		fmt.Fprintf(b, "  %5d  %s\n", c[k], k)
	}
	if rest := keys[min(n, len(keys)):]; len(rest) > 0 {
		lines := 0
		for _, k := range rest {
			lines += c[k]
		}
		fmt.Fprintf(b, "  %5d  in %d more keys\n", lines, len(rest))
	}
}

// TestBlogGolden derives every breakdown but the country from each line
// of a real blog's log (its own host is semicomplete.com), and writes how
// many lines had each key; then what the 40 agents seen most tell.
func TestBlogGolden(t *testing.T) {
	d := newDeriver(t, Config{Breakdowns: names[:], OwnHosts: []string{"semicomplete.com"}})
	records := blogLines(t)
	byKey := make([]counts, numBreakdowns)
	for i := range byKey {
		byKey[i] = counts{}
	}
	agents := counts{}
	told := map[string]string{}
	var m Memo
	var k Keys
	for i := range records {
		d.Derive(&records[i], &m, &k)
		for _, b := range d.Breakdowns() {
			if v, ok := k.Key(b); ok {
				byKey[b][string(v)]++
			}
		}
		ua := string(records[i].UserAgent)
		agents[ua]++
		if _, ok := told[ua]; !ok {
			br, _ := k.Key(Browser)
			os, _ := k.Key(OS)
			dev, _ := k.Key(Device)
			told[ua] = fmt.Sprintf("%s / %s / %s", br, os, dev)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d lines of %s, own host semicomplete.com\n", len(records), filepath.Base(blogLog))
	for _, br := range d.Breakdowns() {
		fmt.Fprintf(&b, "\n%s (%d keys)\n", br, len(byKey[br]))
		byKey[br].top(&b, 25)
	}
	b.WriteString("\nthe 40 agents seen most: lines, browser / os / device, agent\n")
	var top strings.Builder
	agents.top(&top, 40)
	for _, l := range strings.Split(strings.TrimRight(top.String(), "\n"), "\n") {
		n, ua, _ := strings.Cut(strings.TrimLeft(l, " "), "  ")
		if strings.HasPrefix(ua, "in ") {
			fmt.Fprintf(&b, "  %5s  %s\n", n, ua)
			continue
		}
		fmt.Fprintf(&b, "  %5s  %s  %s\n", n, told[ua], ua)
	}
	golden.Check(t, filepath.Join("testdata", "blog-2015.golden"), []byte(b.String()), *update)
}
