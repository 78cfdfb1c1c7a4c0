package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// randomViews is n page views over days days from t0's midnight, of paths
// drawn unevenly from paths distinct ones.
func randomViews(seed uint64, n, days, paths int) []view {
	r := rand.New(rand.NewPCG(seed, 1))
	start := t0.Truncate(day).Unix() - t0.Unix()
	out := make([]view, n)
	for i := range out {
		p := int(float64(paths) * r.Float64() * r.Float64())
		out[i] = view{start + r.Int64N(int64(days)*86400), fmt.Sprintf("/p/%d", p)}
	}
	return out
}

// bruteForce counts the page views per path of the views in [from, to),
// most viewed first, then by path.
func bruteForce(views []view, from, to time.Time) []logtally.PageCount {
	counts := make(map[string]int64)
	for _, v := range views {
		if at := t0.Add(time.Duration(v.sec) * time.Second); !at.Before(from) && at.Before(to) {
			counts[v.path]++
		}
	}
	var out []logtally.PageCount
	for p, n := range counts {
		out = append(out, logtally.PageCount{Path: p, PageViews: n})
	}
	slices.SortFunc(out, byViews)
	return out
}

// commitInBatches commits views in batches of size, compacting the path log
// after every other batch, so that a query finds counts in the shards and
// in the log.
func commitInBatches(t *testing.T, s *Store, views []view, size int) {
	t.Helper()
	for i := 0; i < len(views); i += size {
		commitViews(t, s, views[i:min(i+size, len(views))])
		if i/size%2 == 1 {
			if err := s.compact(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPagesWholeDaysEqualBruteForce: the top pages of whole days, one or
// several, are the exact counts of every path, whether they are in the
// shards or still in the path log.
func TestPagesWholeDaysEqualBruteForce(t *testing.T) {
	s := mustOpen(t, Config{TopPages: 5}) // minutes keep few pages: days must not depend on them
	views := randomViews(1, 20_000, 3, 500)
	commitInBatches(t, s, views, 3000)
	midnight := t0.Truncate(day)
	for _, r := range []struct{ from, to time.Time }{
		{midnight, midnight.Add(day - time.Second)},
		{midnight.Add(day), midnight.Add(2*day - time.Second)},
		{midnight, midnight.Add(3*day - time.Second)},
	} {
		got, err := s.Pages(r.from, r.to, 1000)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteForce(views, r.from, r.to.Add(time.Second))
		if !got.Exact || got.Other != 0 || !slices.Equal(got.Pages, want) {
			t.Errorf("Pages(%s, %s): exact %t, other %d, %d pages; want exact, %d pages:\ngot  %v\nwant %v",
				r.from, r.to, got.Exact, got.Other, len(got.Pages), len(want), got.Pages[:min(5, len(got.Pages))], want[:min(5, len(want))])
		}
	}
	got, _ := s.Pages(midnight, midnight.Add(day-time.Second), 10)
	if want := bruteForce(views, midnight, midnight.Add(day))[:10]; !slices.Equal(got.Pages, want) {
		t.Errorf("limit 10: %v, want %v", got.Pages, want)
	}
}

// TestPagesPartialDays: a range that is not whole days counts its minutes,
// to the minute: exact while each minute kept all of its pages; past that,
// the listed counts are lower bounds, Other holds the rest, and the answer
// says it is not exact.
func TestPagesPartialDays(t *testing.T) {
	views := randomViews(2, 5_000, 2, 50)
	from := t0.Truncate(day).Add(13*time.Hour + 30*time.Second) // 13:00:30: its minute, 13:00, counts
	to := from.Add(day + 2*time.Hour)                           // a whole day, and parts of two others
	want := bruteForce(views, from.Truncate(time.Minute), to.Truncate(time.Minute).Add(time.Minute))

	s := mustOpen(t, Config{})
	commitInBatches(t, s, views, 1000)
	got, err := s.Pages(from, to, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exact || !slices.Equal(got.Pages, want) {
		t.Errorf("partial days, minutes keeping every page: exact %t\ngot  %v\nwant %v", got.Exact, got.Pages, want)
	}

	few := mustOpen(t, Config{TopPages: 2})
	commitInBatches(t, few, views, 1000)
	got, err = few.Pages(from, to, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var total, listed int64
	for _, pc := range want {
		total += pc.PageViews
	}
	exact := make(map[string]int64)
	for _, pc := range want {
		exact[pc.Path] = pc.PageViews
	}
	for _, pc := range got.Pages {
		listed += pc.PageViews
		if pc.PageViews > exact[pc.Path] {
			t.Errorf("%s: %d page views, more than the %d it had", pc.Path, pc.PageViews, exact[pc.Path])
		}
	}
	if got.Exact || got.Other == 0 || listed+got.Other != total {
		t.Errorf("minutes keeping 2 pages: exact %t, listed %d + other %d, want not exact and %d in all", got.Exact, listed, got.Other, total)
	}
}

// TestPagesWholeDaysInZone: whole days are the store's days: a day in
// New York runs from 05:00 to 05:00 UTC in November.
func TestPagesWholeDaysInZone(t *testing.T) {
	s := mustOpen(t, Config{TZ: "America/New_York", TopPages: 1})
	ny := s.Location()
	views := randomViews(3, 4_000, 3, 100)
	commitInBatches(t, s, views, 1000)
	from := time.Date(2026, 11, 21, 0, 0, 0, 0, ny)
	got, err := s.Pages(from, from.Add(day-time.Second), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := bruteForce(views, from, from.Add(day)); !got.Exact || !slices.Equal(got.Pages, want) {
		t.Errorf("a day in New York: exact %t\ngot  %v\nwant %v", got.Exact, got.Pages, want)
	}
}

// TestPagesBeforeKeptHistory: a range that begins before the kept minutes
// counts what is kept, and says from when.
func TestPagesBeforeKeptHistory(t *testing.T) {
	s := mustOpenAt(t, Config{MinuteRetention: time.Hour}, func() time.Time { return t0.Add(day) })
	commitViews(t, s, []view{{0, "/a"}, {3 * 3600, "/b"}}) // /a's minute is past the hour kept
	got, err := s.Pages(t0, t0.Add(4*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []logtally.PageCount{{Path: "/b", PageViews: 1}}; got.Exact || !got.KeptFrom.Equal(t0.Add(2*time.Hour)) || !slices.Equal(got.Pages, want) {
		t.Errorf("Pages = %+v; want /b alone, not exact, kept from %s", got, t0.Add(2*time.Hour))
	}
}

// TestTotalsSumDays: the visitors of several days are the sum of the days'
// visitors, since a visitor is an address within one day (one address is
// another hash the next day); here one hash on two days counts twice.
func TestTotalsSumDays(t *testing.T) {
	s := mustOpen(t, Config{Path: filepath.Join(t.TempDir(), "db"), TZ: "UTC"})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 0x9e3779b97f4a7c15, "/"), 200, 0, false)
		addHit(b, page(1, 0x3c6ef372fe94f82a, "/"), 200, 0, false)
		addHit(b, page(86400, 0x9e3779b97f4a7c15, "/"), 200, 0, false)
	})
	got, err := s.Totals(t0, t0.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got.Visitors != 3 || !got.Approximate || got.PageViews != 3 {
		t.Errorf("Totals = %d visitors (approximate %v), %d page views; want 3, true, 3", got.Visitors, got.Approximate, got.PageViews)
	}
}

// TestPagesPastDayCap: the page views a day counted past its cap
// (--max-day-paths) under logtally.OtherPath are the range's Other, and
// make it inexact; OtherPath is no page of its own.
func TestPagesPastDayCap(t *testing.T) {
	s := mustOpen(t, Config{MaxDayPaths: 2})
	var views []view
	for i := range 10 {
		views = append(views, view{int64(i), "/a"}, view{int64(i), "/b"}, view{int64(i), fmt.Sprintf("/past/%d", i)})
	}
	commitViews(t, s, views)
	for _, compacted := range []bool{false, true} {
		if compacted {
			if err := s.compact(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Pages(t0.Truncate(24*time.Hour), t0.Truncate(24*time.Hour).Add(24*time.Hour-time.Second), 10)
		if err != nil {
			t.Fatal(err)
		}
		want := logtally.PageRange{Pages: []logtally.PageCount{{Path: "/a", PageViews: 10}, {Path: "/b", PageViews: 10}}, Other: 10}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("compacted %v: Pages of the day = %+v, want %+v (not exact)", compacted, got, want)
		}
	}
}
