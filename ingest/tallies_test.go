package ingest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/tailer"
)

// breakdownMinute is a breakdown's minute as a batch holds it, its views
// counted by key, for comparison whatever the order they were added in.
type breakdownMinute struct {
	Requests, PageViews, Bytes int64
	Status                     [5]int64
	Visitors                   int
	Views                      map[string]int
}

// breakdownMinutes returns the minutes of each breakdown's pending batch,
// by site and unix minute.
func breakdownMinutes(c *Core) map[string]map[int64]breakdownMinute {
	out := map[string]map[int64]breakdownMinute{}
	for _, s := range c.Pending() {
		b := s.Batch
		if !b.KeysOnly() {
			continue
		}
		minutes := map[int64]breakdownMinute{}
		for m, d := range b.Minutes() {
			bm := breakdownMinute{Requests: d.Requests, PageViews: d.PageViews, Bytes: d.Bytes, Status: d.Status,
				Visitors: len(d.Visitors), Views: map[string]int{}}
			for _, id := range d.Views {
				bm.Views[b.Paths()[id]]++
			}
			minutes[m] = bm
		}
		out[s.Name()] = minutes
	}
	return out
}

// A replay's breakdown keys, tallied by key and minute as they are parsed,
// leave in the breakdowns' batches what the live loop's matches, hit by
// hit, leave there: chunks of few keys, and chunks of so many (a 404 of a
// new path on most lines) that their table fills and the hits past it
// are matched.
func TestTalliedBreakdownsEqualMatches(t *testing.T) {
	format, classifier := ingesttest.Combined(t)
	d, err := breakdown.New(breakdown.Config{Breakdowns: []string{"status", "not-found", "hour", "weekday", "referrer",
		"browser"}}, breakdown.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	newCore := func(hitByHit bool) *Core {
		c, err := New(Config{HitByHit: hitByHit}, Deps{Format: format, Classifier: classifier, Breakdowns: d,
			Now: func() time.Time { return ingesttest.T0.Add(48 * time.Hour) }})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tallied, matched := newCore(false), newCore(true)
	rng := rand.New(rand.NewPCG(3, 4))
	agents := []string{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "curl/8.5.0",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"}
	for chunk := range 8 {
		var data []byte
		for i := range 3000 {
			status, path := []int{200, 200, 304, 404, 500, 301}[rng.IntN(6)], fmt.Sprintf("/p/%d", rng.IntN(20))
			if chunk%2 == 1 && rng.IntN(4) > 0 {
				status, path = 404, fmt.Sprintf("/missing/%d/%d", chunk, i) // a key of its own
			}
			ts := ingesttest.T0.Add(time.Duration(chunk*3000+i) * 7 * time.Second)
			data = fmt.Appendf(data, "192.0.2.%d - - [%s] \"GET %s HTTP/1.1\" %d %d \"https://r%d.example/\" \"%s\"\n",
				rng.IntN(50), ts.Format("02/Jan/2006:15:04:05 -0700"), path, status, rng.IntN(5000), rng.IntN(30),
				agents[rng.IntN(len(agents))])
		}
		ch := tailer.Chunk{File: "f", Data: data, Offset: int64(len(data))}
		var rt, rm Result
		feed(tallied, ch, &rt)
		feed(matched, ch, &rm)
		if chunk%2 == 1 && len(rt.matches) == 0 {
			t.Errorf("chunk %d: its many keys filled no table: none matched", chunk)
		}
		if len(rt.tallies.list) == 0 || len(rm.tallies.list) != 0 {
			t.Errorf("chunk %d: %d tallies replaying, %d hit by hit; want some, none", chunk, len(rt.tallies.list),
				len(rm.tallies.list))
		}
	}
	got, want := breakdownMinutes(tallied), breakdownMinutes(matched)
	if len(want) != 6 {
		t.Fatalf("%d breakdowns' batches hit by hit, want 6", len(want))
	}
	for site, w := range want {
		if g := got[site]; !maps.EqualFunc(g, w, func(a, b breakdownMinute) bool {
			return a.Requests == b.Requests && a.PageViews == b.PageViews && a.Bytes == b.Bytes && a.Status == b.Status &&
				a.Visitors == b.Visitors && maps.Equal(a.Views, b.Views)
		}) {
			t.Errorf("%s: tallied minutes differ from matched ones:\n got %v\nwant %v", site, g, w)
		}
	}
	for i := range d.Breakdowns() {
		if g, w := tallied.BreakdownLines(i), matched.BreakdownLines(i); g != w || w == 0 {
			t.Errorf("breakdown %s counted %d lines tallied, %d matched", d.Breakdowns()[i], g, w)
		}
	}
	if names := slices.Collect(maps.Keys(got)); len(names) != len(want) {
		t.Errorf("tallied batches of %q, want %d", names, len(want))
	}
}
