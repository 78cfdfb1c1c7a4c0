package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// TestPathVisitorsMatchBruteForce: with PathVisitors, every path's
// distinct visitors in the window equal a count of the hits still in it,
// as hits come out of order, the window slides, and some come back
// through SeedPairs.
func TestPathVisitorsMatchBruteForce(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			const length = 60
			w := New(Config{Length: length * time.Second, MaxSkew: 5 * time.Second, PathVisitors: true, Pages: 1000}, time.Unix(1000, 0))
			type hit struct {
				sec  int64
				path string
				v    uint64
			}
			var hits []hit
			now := int64(1000)
			for step := range 3000 {
				if rng.IntN(10) == 0 {
					now += int64(rng.IntN(5))
					w.Advance(time.Unix(now, 0))
				}
				h := hit{sec: now - int64(rng.IntN(20)), path: fmt.Sprintf("k%d", rng.IntN(15)), v: uint64(rng.IntN(40))}
				if step%7 == 0 {
					w.SeedPairs(h.sec, map[string][]uint64{h.path: {h.v}})
					w.Seed(h.sec, 1, 1, nil, map[string]int64{h.path: 1})
				} else {
					w.Add(logtally.Hit{Time: h.sec, Visitor: h.v, Path: []byte(h.path), PageView: true})
				}
				hits = append(hits, h)
				if step%50 != 49 {
					continue
				}
				w.Publish()
				want := map[string]map[uint64]bool{}
				for _, h := range hits {
					if h.sec > now-length && h.sec <= now {
						if want[h.path] == nil {
							want[h.path] = map[uint64]bool{}
						}
						want[h.path][h.v] = true
					}
				}
				got := map[string]int64{}
				for _, p := range w.Current().Pages {
					got[p.Path] = p.Visitors
				}
				for p, vs := range want {
					if got[p] != int64(len(vs)) {
						t.Fatalf("step %d, path %s: %d visitors, want %d", step, p, got[p], len(vs))
					}
				}
			}
		})
	}
}
