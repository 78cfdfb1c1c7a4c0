package storage

import (
	"compress/gzip"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/golden"
	"github.com/logtally/logtally/tally"
)

// setsConfig is the configuration of the stores of setsSteps: a few top
// pages a minute, so that minutes fold pages into Other.
var setsConfig = Config{TopPages: 5, TZ: "UTC"}

// setsStep is one step of the history of testdata/v5-sets.db.gz: a commit
// of one batch a site at a clock, or a prune (no hits) at a clock.
type setsStep struct {
	clock time.Duration // after t0
	hits  map[string][]logtally.Hit
}

// setsHits returns the hits of a step, made from rng: for each minute (of
// t0) in minutes, n(minute) new visitors with a page view each, and the
// first repeats of the minute's visitors of an earlier step again.
type setsMinute struct {
	minute  int64
	fresh   int   // new visitors, a page view each
	repeats int   // visitors of earlier steps' page views of the minute, again
	assets  int64 // requests that are not page views
}

// setsSteps are the steps of testdata/v5-sets.db.gz: minutes of the
// default site and of b.example, of 0 to 2,500 visitors, written in one
// commit or several, some repeats counting a minute past denseFrom with
// fewer distinct visitors; a prune that compacts the visitor sets of the
// first hour; late lines into compacted minutes (approximate from then
// on), into one with no visitors (exact again), and into a new minute
// behind the span (which keeps its set).
func setsSteps() []setsStep {
	rng := rand.New(rand.NewPCG(5, 6))
	seen := make(map[string]map[int64][]uint64)
	build := func(site string, ms []setsMinute) []logtally.Hit {
		if seen[site] == nil {
			seen[site] = make(map[int64][]uint64)
		}
		var hits []logtally.Hit
		for _, m := range ms {
			sec := 60 * m.minute
			for i := range m.assets {
				hits = append(hits, asset(sec+i%60))
			}
			old := seen[site][m.minute]
			for i := range m.repeats {
				hits = append(hits, page(sec+int64(i%60), old[i], fmt.Sprintf("/p%d", i%7)))
			}
			for i := range m.fresh {
				v := rng.Uint64()
				seen[site][m.minute] = append(seen[site][m.minute], v)
				path := fmt.Sprintf("/p%d", rng.IntN(12))
				hits = append(hits, page(sec+int64(i%60), v, path))
				if i%3 == 0 {
					hits = append(hits, page(sec+int64(i%60), v, path)) // a second view
				}
			}
		}
		return hits
	}
	var first, firstB []setsMinute
	for i := range int64(60) {
		switch {
		case i == 0:
			first = append(first, setsMinute{minute: i, assets: 3})
		case i == 5:
			first = append(first, setsMinute{minute: i, fresh: 2500})
		case i == 6:
			first = append(first, setsMinute{minute: i, fresh: 1500})
		default:
			first = append(first, setsMinute{minute: i, fresh: int(i%9) + 1, assets: i % 2})
		}
		if i%3 == 0 {
			firstB = append(firstB, setsMinute{minute: i, fresh: 2})
		}
	}
	var recent, recentB []setsMinute
	for i := int64(180); i <= 200; i++ {
		n := 4
		if i == 196 {
			n = 1500
		}
		recent = append(recent, setsMinute{minute: i, fresh: n})
		if i <= 190 {
			recentB = append(recentB, setsMinute{minute: i, fresh: 2})
		}
	}
	b := "b.example"
	return []setsStep{
		{70 * time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, first), b: build(b, firstB)}},
		{70 * time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, []setsMinute{
			{minute: 6, repeats: 600}, // 1,500 + 600 past denseFrom, 1,500 distinct
			{minute: 1, fresh: 3, repeats: 1}, {minute: 2, fresh: 3, repeats: 2}, {minute: 3, fresh: 3, repeats: 2},
			{minute: 4, fresh: 3, repeats: 2}, {minute: 0, assets: 2},
		})}},
		{3*time.Hour + 25*time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, recent), b: build(b, recentB)}},
		{3*time.Hour + 40*time.Minute, nil}, // compacts the first hour's sets
		{3*time.Hour + 45*time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, []setsMinute{
			{minute: 2, fresh: 2, repeats: 1}, {minute: 0, fresh: 1}, {minute: 70, fresh: 3},
			{minute: 6, fresh: 5}, {minute: 190, fresh: 2, repeats: 1},
			{minute: 196, repeats: 600}, // a kept set of 1,500 visitors, whose sketch is dense
		}), b: build(b, []setsMinute{{minute: 3, fresh: 1}})}},
	}
}

// setsMore are the steps after setsSteps that the upgrade test takes in
// both stores: a prune that compacts the sets the file kept behind the
// span, then lines into compacted minutes, into a kept set and into new
// minutes.
func setsMore() []setsStep {
	rng := rand.New(rand.NewPCG(7, 8))
	pages := func(minute int64, n int) []logtally.Hit {
		var hits []logtally.Hit
		for i := range n {
			hits = append(hits, page(60*minute+int64(i), rng.Uint64(), "/p1"))
		}
		return hits
	}
	def := append(pages(0, 2), pages(185, 3)...)
	def = append(def, pages(5, 10)...)
	def = append(def, pages(70, 1)...)
	def = append(def, pages(196, 2)...)
	for m := int64(201); m <= 205; m++ {
		def = append(def, pages(m, 3)...)
	}
	return []setsStep{
		{4 * time.Hour, nil},
		{4*time.Hour + 5*time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: def, "b.example": pages(183, 1)}},
	}
}

// runSteps takes steps in s, whose clock is *clock.
func runSteps(t *testing.T, s *Store, clock *time.Time, steps []setsStep) {
	t.Helper()
	for _, st := range steps {
		*clock = t0.Add(st.clock)
		if st.hits == nil {
			if _, err := s.Prune(context.Background()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var bs []*tally.Batch
		for _, site := range []string{logtally.DefaultSite, "b.example"} {
			if hits, ok := st.hits[site]; ok {
				b := tally.NewSiteBatch(site)
				for _, h := range hits {
					addHit(b, h, 200, 100, false)
				}
				bs = append(bs, b)
			}
		}
		if err := s.Commit(bs...); err != nil {
			t.Fatal(err)
		}
	}
}

// setsAnswers returns, a line each, what the sites of a store of
// setsSteps answer: every minute, hour and day, series of 5 and 10
// minutes (whose visitors merge the minutes'), the top pages and path
// counts, and the exact visitor set of every minute that keeps one.
func setsAnswers(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	from, to := t0, t0.Add(4*time.Hour)
	for _, name := range []string{logtally.DefaultSite, "b.example"} {
		si, ok := s.Site(name)
		if !ok {
			t.Fatalf("no site %s", name)
		}
		fmt.Fprintf(&b, "site %s\n", name)
		minutes, err := si.Minutes(from, to)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range minutes {
			fmt.Fprintf(&b, "minute %s %+v\n", m.Time.Format("15:04"), m.Counts)
		}
		for _, step := range []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, time.Hour, 24 * time.Hour} {
			series, err := si.Series(from, to, step)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "series %s approximate %t kept from %s\n", step, series.Approximate, series.KeptFrom.Format(time.RFC3339))
			for _, p := range series.Points {
				if p.Requests > 0 {
					fmt.Fprintf(&b, "  %s %+v\n", p.Time.Format("15:04"), p)
				}
			}
		}
		pages, err := si.Pages(from, to, 10)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "pages %+v\n", pages)
		counts, err := si.PathCounts([]string{"/p0", "/p1", "/p11", "/app.css"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "path counts %+v\n", counts)
		totals, err := si.Totals(from, to)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "totals %+v\n", totals)
		for m := from; !m.After(to); m = m.Add(time.Minute) {
			set, ok, err := si.MinuteVisitors(m)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				h := fnv.New64a()
				fmt.Fprint(h, set)
				fmt.Fprintf(&b, "visitors %s %d %x\n", m.Format("15:04"), len(set), h.Sum64())
			}
		}
	}
	return b.String()
}

// readGzip writes the gzipped file at src to a temporary file, and returns
// its path.
func readGzip(t *testing.T, src string) string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSetsStepsAnswerTheGolden: a store fed setsSteps answers what the
// program of schema 5 answered (testdata/v5-sets.golden).
func TestSetsStepsAnswerTheGolden(t *testing.T) {
	clock := t0
	s := mustOpenAt(t, setsConfig, func() time.Time { return clock })
	runSteps(t, s, &clock, setsSteps())
	checkSetsGolden(t, setsAnswers(t, s))
}

// checkSetsGolden compares answers with testdata/v5-sets.golden, what the
// store that wrote testdata/v5-sets.db.gz answered. It is not rewritten
// by -update: no program of this schema can write it again.
func checkSetsGolden(t *testing.T, answers string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", "v5-sets.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if d := golden.Diff(string(want), answers); d != "" {
		t.Errorf("answers differ from testdata/v5-sets.golden:\n%s", d)
	}
}

// v5Sets writes testdata/v5-sets.db.gz to a temporary file and returns its
// path: the file that 31624d4 (schema 5, visitor sets in a bucket of their
// own) wrote from setsSteps, with setsConfig, its answers in
// testdata/v5-sets.golden.
func v5Sets(t *testing.T) string {
	t.Helper()
	return readGzip(t, filepath.Join("testdata", "v5-sets.db.gz"))
}

// TestV5SetsReadAsTheyWere: the file of schema 5, opened read-only (as
// report and check do, upgrading nothing), answers what it answered.
func TestV5SetsReadAsTheyWere(t *testing.T) {
	cfg := setsConfig
	cfg.Path = v5Sets(t)
	s, err := OpenReadOnly(cfg, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkSetsGolden(t, setsAnswers(t, s))
}
