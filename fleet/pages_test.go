package fleet

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
)

// TestPages: the fleet's top pages of a range are its days' page views
// per path, exact for whole days; a range within a day counts the day
// whole and says it is not exact, and one before what is kept says from
// when.
func TestPages(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Database(t), "reader", time.Unix(t0+600, 0))
	w := generate(rand.New(rand.NewPCG(71, 72)), 2, 3, 200)
	applySerial(t, s, w)
	views := map[string]map[string]int64{} // day -> path -> page views
	for _, l := range w.lines {
		if l.rejected || l.visitor == 0 {
			continue
		}
		day := time.Unix(l.t, 0).UTC().Format(time.DateOnly)
		if views[day] == nil {
			views[day] = map[string]int64{}
		}
		views[day][l.path]++
	}
	want := func(days ...string) map[string]int64 {
		out := map[string]int64{}
		for _, d := range days {
			for p, n := range views[d] {
				out[p] += n
			}
		}
		return out
	}
	day := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		from, to time.Time
		exact    bool
		days     []string
		keptFrom time.Time
		now      time.Time
	}{
		{"a whole day", day, day.Add(24*time.Hour - time.Second), true, []string{"2026-11-21"}, time.Time{}, time.Unix(t0+600, 0)},
		{"two whole days", day, day.Add(48*time.Hour - time.Second), true, []string{"2026-11-21", "2026-11-22"}, time.Time{}, time.Unix(t0+600, 0)},
		{"across midnight", day.Add(23*time.Hour + 50*time.Minute), day.Add(24*time.Hour + 2*time.Minute), false,
			[]string{"2026-11-21", "2026-11-22"}, time.Time{}, time.Unix(t0+600, 0)},
		{"before what is kept", day, day.Add(48*time.Hour - time.Second), false, []string{"2026-11-22"},
			day.Add(24 * time.Hour), day.Add(24*time.Hour + DefaultHourRetention)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reader := open(t, s.cfg.URL, "reader", tt.now)
			got, err := reader.Pages(testContext(t), logtally.DefaultSite, tt.from, tt.to, 1000)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int64{}
			for _, p := range got.Pages {
				counts[p.Path] = p.PageViews
			}
			if w := want(tt.days...); !maps.Equal(counts, w) {
				t.Errorf("pages = %v, want %v", counts, w)
			}
			if !slices.IsSortedFunc(got.Pages, func(a, b logtally.PageCount) int { return int(b.PageViews - a.PageViews) }) {
				t.Errorf("pages not most viewed first: %v", got.Pages)
			}
			if got.Exact != tt.exact || !got.KeptFrom.Equal(tt.keptFrom) {
				t.Errorf("exact %v, kept from %s; want %v, %s", got.Exact, got.KeptFrom, tt.exact, tt.keptFrom)
			}
		})
	}
}
