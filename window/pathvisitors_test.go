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
					w.Seed(h.sec, 1, 1, nil, map[string]int64{h.path: 1})
					w.SeedPairs(h.sec, map[string][]uint64{h.path: {h.v}})
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

// TestPathVisitorsBoundedByPaths: a window of 100 paths that sees 200,000
// distinct paths in it keeps pairs of path and visitor for about the paths
// it holds, not for every one seen, and the visitors of the paths that stay
// held (a few popular ones) stay exact.
func TestPathVisitorsBoundedByPaths(t *testing.T) {
	const length, maxPaths = 600, 100
	w := New(Config{Length: length * time.Second, MaxPaths: maxPaths, PathVisitors: true, Pages: maxPaths}, time.Unix(1000, 0))
	popular := map[string]map[uint64]bool{}
	for i := range 200_000 {
		sec := int64(1000 - length + 1 + i*(length-1)/200_000)
		w.Add(logtally.Hit{Time: sec, Visitor: uint64(i), Path: fmt.Appendf(nil, "rare/%d", i), PageView: true})
		p, v := fmt.Sprintf("popular/%d", i%3), uint64(i%97)
		w.Add(logtally.Hit{Time: sec, Visitor: v, Path: []byte(p), PageView: true})
		if popular[p] == nil {
			popular[p] = map[uint64]bool{}
		}
		popular[p][v] = true
	}
	w.Publish()
	if n := len(w.pathVisitors.pairs); n > 3*97+2*maxPaths+2*minSweep {
		t.Errorf("%d pairs kept for %d paths held, want about the held paths' pairs", n, maxPaths)
	}
	for _, pc := range w.Current().Pages {
		if want, ok := popular[pc.Path]; ok && pc.Visitors != int64(len(want)) {
			t.Errorf("%s: %d visitors, want %d", pc.Path, pc.Visitors, len(want))
		}
	}
	if w.Current().PageVisitorsApproximate {
		t.Error("visitors per path said approximate, with every pair kept")
	}
}

// TestPathVisitorsCapped: past MaxPairs a new pair is not kept, the
// snapshot says the visitors per path are lower bounds until the second
// it came in leaves the window, and then they are exact again.
func TestPathVisitorsCapped(t *testing.T) {
	w := New(Config{Length: 60 * time.Second, MaxPaths: 10, MaxPairs: 50, PathVisitors: true}, time.Unix(1000, 0))
	for v := range uint64(80) {
		w.Add(logtally.Hit{Time: 1000 - 30, Visitor: v, Path: []byte("a"), PageView: true})
	}
	w.Publish()
	snap := w.Current()
	if len(w.pathVisitors.pairs) != 50 || snap.Pages[0].Visitors != 50 || !snap.PageVisitorsApproximate {
		t.Errorf("%d pairs, %d visitors, approximate %v; want 50, 50 and true",
			len(w.pathVisitors.pairs), snap.Pages[0].Visitors, snap.PageVisitorsApproximate)
	}
	w.Advance(time.Unix(1000+31, 0))
	w.Add(logtally.Hit{Time: 1000 + 31, Visitor: 1, Path: []byte("a"), PageView: true})
	w.Publish()
	if snap := w.Current(); snap.Pages[0].Visitors != 1 || snap.PageVisitorsApproximate {
		t.Errorf("a window later: %+v, want 1 exact visitor", snap)
	}
}
