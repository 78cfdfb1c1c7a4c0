package storage

import (
	"fmt"
	"testing"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// TestCountersShareWhileAlike: counters given one batch (with views for the
// others) share the history of the first while they hold none of their
// own, and each is given a copy of it as soon as it counts apart (a
// batch of its own, or none while the one it shares has one); through
// all of it, and after reopening, each reads exactly what a store that
// kept it apart holds.
func TestCountersShareWhileAlike(t *testing.T) {
	x, y, z := logtally.CounterSite("x"), logtally.CounterSite("y"), logtally.CounterSite("z")
	s, apart := mustOpen(t, Config{}), mustOpen(t, Config{})
	for _, st := range []*Store{s, apart} {
		if err := st.AddSites(x, y, z); err != nil {
			t.Fatal(err)
		}
	}
	// Each step: the batches of one commit, by the sites that read them.
	steps := []struct {
		batches   [][]string
		wantShare map[string]string // after the step
	}{
		{[][]string{{x, y, z}}, map[string]string{x: x, y: x, z: x}},
		{[][]string{{x, y}, {z}}, map[string]string{x: x, y: x, z: z}},
		{[][]string{{y}}, map[string]string{x: x, y: y, z: z}},
		{[][]string{{x}, {y, z}}, map[string]string{x: x, y: y, z: z}},
	}
	for n, step := range steps {
		var together []*tally.Batch
		for k, sites := range step.batches {
			seed := 10*n + k
			b := counterBatch(sites[0], seed)
			b.SetAlso(sites[1:])
			together = append(together, b)
			for _, site := range sites {
				if err := apart.Commit(counterBatch(site, seed)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.Commit(together...); err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		if n == 2 {
			s = reopen(t, s)
		}
		for _, site := range []string{x, y, z} {
			if got, want := s.Shares(site), step.wantShare[site]; got != want {
				t.Errorf("step %d: %s reads %s, want %s", n, site, got, want)
			}
			got, want := readAll(t, mustSite(t, s, s.Shares(site))), readAll(t, mustSite(t, apart, site))
			if got != want {
				t.Errorf("step %d: %s reads\n%s\nkept apart\n%s", n, site, got, want)
			}
		}
	}
}

// counterBatch returns a batch of site with page views of its own, by seed.
func counterBatch(site string, seed int) *tally.Batch {
	b := tally.NewSiteBatch(site)
	for i := range 5 + seed%3 {
		addHit(b, page(int64(60*seed+i), uint64(seed%4+i), fmt.Sprintf("/k%d", (seed+i)%4)), 200, 10, false)
	}
	return b
}
