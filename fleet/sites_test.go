package fleet

import (
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/tally"
)

// TestApplySeveralSites: a node's outbox numbers the batches of all its
// sites in one sequence; they apply in that order, each to its own site,
// a re-sent one counts once, and a gap is still a gap.
func TestApplySeveralSites(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := open(t, pgtest.Database(t), "a", time.Unix(t0+3600, 0))
	batch := func(site string, n int) *tally.Batch {
		b := tally.NewSiteBatch(site)
		for i := range n {
			b.Add(&logtally.Hit{Time: t0 + int64(i), Visitor: uint64(i%3 + 1), Path: []byte("/p"), Status: 200, PageView: true}, false)
			b.AddLines(1)
		}
		return b
	}
	seq := []*tally.Batch{batch("blog.example.org", 5), batch(logtally.AllSites, 5), batch("shop.example.org", 7),
		batch(logtally.AllSites, 7), batch("blog.example.org", 2), batch(logtally.AllSites, 2)}
	for i, b := range seq {
		if applied, err := apply(ctx, s, "a", uint64(i+1), b); !applied || err != nil {
			t.Fatalf("Apply %d (%s) = %v, %v", i+1, b.Site(), applied, err)
		}
	}
	if applied, err := apply(ctx, s, "a", 6, seq[5]); applied || err != nil {
		t.Errorf("Apply 6 again = %v, %v; want false, nil", applied, err)
	}
	if _, err := apply(ctx, s, "a", 8, seq[0]); err == nil {
		t.Errorf("Apply 8 after 6: no error, want ErrGap")
	}
	from, to := time.Unix(t0-3600, 0), time.Unix(t0+3600, 0)
	for site, want := range map[string]int64{"blog.example.org": 7, "shop.example.org": 7, logtally.AllSites: 14} {
		series, err := s.Series(ctx, site, from, to, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, p := range series.Points {
			got += p.Requests
		}
		if got != want {
			t.Errorf("site %s: %d requests, want %d", site, got, want)
		}
	}
}
