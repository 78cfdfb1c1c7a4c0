package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// publish publishes w's counts and returns the snapshot.
func publish(w *Window) *logtally.Snapshot {
	w.Publish()
	return w.Current()
}

func pv(sec int64, visitor uint64, path string) logtally.Hit {
	return logtally.Hit{Time: t0.Unix() + sec, PageView: true, Visitor: visitor, Path: []byte(path)}
}

func other(sec int64) logtally.Hit {
	return logtally.Hit{Time: t0.Unix() + sec, Path: []byte("/x.css")}
}

func TestSlidesSecondBySecond(t *testing.T) {
	w := New(Config{Length: 10 * time.Second}, t0)
	w.Add(pv(-9, 1, "/a")) // oldest second still inside
	w.Add(pv(-5, 2, "/b"))
	w.Add(other(0))
	tests := []struct {
		at                            int64
		requests, pageviews, visitors int64
	}{
		{0, 3, 2, 2},
		{1, 2, 1, 1}, // second -9 leaves when the window ends at +1
		{4, 2, 1, 1},
		{5, 1, 0, 0}, // second -5 leaves
		{9, 1, 0, 0},
		{10, 0, 0, 0}, // second 0 leaves
	}
	for _, tt := range tests {
		w.Advance(t0.Add(time.Duration(tt.at) * time.Second))
		s := publish(w)
		if s.Requests != tt.requests || s.PageViews != tt.pageviews || s.Visitors != tt.visitors {
			t.Errorf("at +%ds: got requests=%d pageviews=%d visitors=%d, want %d %d %d",
				tt.at, s.Requests, s.PageViews, s.Visitors, tt.requests, tt.pageviews, tt.visitors)
		}
	}
}

func TestRepeatVisitorAcrossEdge(t *testing.T) {
	w := New(Config{Length: 10 * time.Second}, t0)
	w.Add(pv(-9, 7, "/a"))
	w.Add(pv(-2, 7, "/b"))
	w.Add(pv(-3, 7, "/c")) // out of order: earlier than the latest
	if got := publish(w).Visitors; got != 1 {
		t.Fatalf("visitors = %d, want 1", got)
	}
	w.Advance(t0.Add(7 * time.Second)) // window is -2..+7: -9 and -3 left, -2 stays
	if s := publish(w); s.Visitors != 1 || s.PageViews != 1 {
		t.Fatalf("after slide: visitors=%d pageviews=%d, want 1 1", s.Visitors, s.PageViews)
	}
	w.Advance(t0.Add(8 * time.Second))
	if s := publish(w); s.Visitors != 0 || s.PageViews != 0 {
		t.Fatalf("after all left: visitors=%d pageviews=%d, want 0 0", s.Visitors, s.PageViews)
	}
}

func TestOutOfOrder(t *testing.T) {
	w := New(Config{Length: 10 * time.Second}, t0)
	// Seconds arrive shuffled; each counts in its own second.
	for _, sec := range []int64{-1, -8, 0, -9, -3, -8} {
		w.Add(pv(sec, uint64(100+sec), "/a"))
	}
	tests := []struct {
		at                  int64
		pageviews, visitors int64
	}{
		{0, 6, 5},
		{1, 5, 4}, // -9 leaves
		{2, 3, 3}, // both -8 leave, one visitor
		{6, 3, 3},
		{7, 2, 2}, // -3 leaves
		{9, 1, 1}, // -1 leaves
		{10, 0, 0},
	}
	for _, tt := range tests {
		w.Advance(t0.Add(time.Duration(tt.at) * time.Second))
		if s := publish(w); s.PageViews != tt.pageviews || s.Visitors != tt.visitors {
			t.Errorf("at +%ds: pageviews=%d visitors=%d, want %d %d", tt.at, s.PageViews, s.Visitors, tt.pageviews, tt.visitors)
		}
	}
}

func TestOldAndFutureHits(t *testing.T) {
	w := New(Config{Length: 10 * time.Second, MaxSkew: 5 * time.Second}, t0)
	tests := []struct {
		name string
		hit  logtally.Hit
		want Outcome
	}{
		{"older than the window", pv(-10, 1, "/old"), TooOld},
		{"oldest second", pv(-9, 1, "/edge"), Counted},
		{"now", pv(0, 1, "/now"), Counted},
		{"next second", pv(1, 2, "/soon"), Held},
		{"at the skew", pv(5, 3, "/future"), Held},
		{"past the skew", pv(6, 4, "/wrong-clock"), TooNew},
	}
	for _, tt := range tests {
		if got := w.Add(tt.hit); got != tt.want {
			t.Errorf("%s: Add = %v, want %v", tt.name, got, tt.want)
		}
	}
	if s := publish(w); s.Requests != 2 || s.Rejected != 1 || s.Visitors != 1 {
		t.Fatalf("before the future seconds: %+v, want 2 requests, 1 visitor, 1 rejected", s)
	}
	w.Advance(t0.Add(time.Second))
	if s := publish(w); s.Requests != 2 || s.Visitors != 2 || s.Pages[1].Path != "/soon" {
		t.Fatalf("at +1s: %+v, want -9 gone and the first held hit counted", s)
	}
	// The ring of held seconds is reused: a hit for +7 is fine now.
	if got := w.Add(pv(6, 4, "/six")); got != Held {
		t.Errorf("Add(+6) at +1s = %v, want Held", got)
	}
	w.Advance(t0.Add(6 * time.Second))
	s := publish(w)
	if s.Requests != 4 || s.Visitors != 4 {
		t.Fatalf("at +6s: %+v, want 4 requests and visitors (+5 and +6 came)", s)
	}
	if want := []logtally.PageCount{{Path: "/future", PageViews: 1}, {Path: "/now", PageViews: 1}, {Path: "/six", PageViews: 1}, {Path: "/soon", PageViews: 1}}; !slices.Equal(s.Pages, want) {
		t.Errorf("pages = %v, want %v", s.Pages, want)
	}
	w.Advance(t0.Add(10 * time.Second)) // the rejected line's second, 0, leaves
	if s := publish(w); s.Rejected != 0 {
		t.Errorf("rejected = %d after its second left, want 0", s.Rejected)
	}
}

func TestHeldHitsSkippedByAJump(t *testing.T) {
	w := New(Config{Length: 3 * time.Second, MaxSkew: 5 * time.Second}, t0)
	w.Add(pv(2, 1, "/a"))
	w.Add(pv(5, 2, "/b"))
	w.Advance(t0.Add(7 * time.Second)) // window is 5..7: +2 is history, +5 counts
	if s := publish(w); s.PageViews != 1 || s.Visitors != 1 || len(s.Pages) != 1 || s.Pages[0].Path != "/b" {
		t.Fatalf("after the jump: %+v, want only /b", s)
	}
	w.Advance(t0.Add(100 * time.Second))
	if s := publish(w); s.Requests != 0 || len(s.Pages) != 0 {
		t.Fatalf("after a long jump: %+v, want empty", s)
	}
}

func TestNoSkew(t *testing.T) {
	w := New(Config{Length: 10 * time.Second}, t0)
	if got := w.Add(pv(1, 1, "/a")); got != TooNew {
		t.Fatalf("Add(+1) with no skew = %v, want TooNew", got)
	}
}

func TestPagesOrder(t *testing.T) {
	w := New(Config{}, t0)
	for i, p := range []string{"/b", "/a", "/c", "/b", "/a", "/b"} {
		w.Add(pv(-int64(i), uint64(i), p))
	}
	got := publish(w).Pages
	want := []logtally.PageCount{{Path: "/b", PageViews: 3}, {Path: "/a", PageViews: 2}, {Path: "/c", PageViews: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
}

// TestMatchesBruteForce checks the incremental counts against a recount from
// the raw hits, for random streams and random read times: hits late, early,
// too far ahead, rejected lines, repeat visitors, jumps longer than the
// window. While no path has been folded, pages are exact too; after that,
// every count is a lower bound.
func TestMatchesBruteForce(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			length := int64(1 + rng.IntN(40))
			skew := int64(rng.IntN(6))
			npaths := 1 + rng.IntN(30)
			maxPaths := 1000
			if seed%4 == 3 {
				maxPaths = 1 + rng.IntN(npaths) // folding
			}
			maxVisitors := 1000
			if seed%4 == 2 {
				maxVisitors = 5 + rng.IntN(30) // estimates
			}
			w := New(Config{Length: time.Duration(length) * time.Second, MaxSkew: time.Duration(skew) * time.Second,
				MaxPaths: maxPaths, MaxVisitors: maxVisitors}, t0)
			if seed%2 == 1 { // compact the lists as often as the doubling rule allows
				w.refs.minStale, w.visitors.minStale = 0, 0
			}
			m := model{length: length, skew: skew, now: t0.Unix()}
			for range 3000 {
				switch r := rng.IntN(100); {
				case r < 8:
					step := int64(rng.IntN(4))
					if rng.IntN(20) == 0 {
						step = int64(rng.IntN(int(2 * length)))
					}
					m.now += step
					w.Advance(time.Unix(m.now, 0))
				case r < 20:
					m.check(t, publish(w), maxPaths, w.paths.folded == 0, maxVisitors)
					checkWindow(t, w)
				case r < 22:
					w.Reject()
					m.rejected = append(m.rejected, m.now)
				default:
					h := logtally.Hit{
						Time:     m.now - int64(rng.IntN(int(length)+3)) + int64(rng.IntN(int(skew)+3)),
						PageView: rng.IntN(3) > 0,
						Visitor:  mix(uint64(rng.IntN(40))),
						Path:     fmt.Appendf(nil, "/p%d", rng.IntN(npaths)),
					}
					if got, want := w.Add(h), m.add(h); got != want {
						t.Fatalf("Add(%+v) at %d = %v, want %v", h, m.now, got, want)
					}
				}
			}
			if maxVisitors < 1000 && m.approximate == 0 {
				t.Errorf("the visitor cap %d was never passed", maxVisitors)
			}
		})
	}
}

// model is the brute-force window: it keeps every hit.
type model struct {
	length, skew, now int64
	hits              []logtally.Hit
	rejected          []int64 // seconds
	approximate       int     // snapshots with estimated visitors
}

func (m *model) add(h logtally.Hit) Outcome {
	switch {
	case h.Time <= m.now-m.length:
		return TooOld
	case h.Time > m.now+m.skew:
		m.rejected = append(m.rejected, m.now)
		return TooNew
	}
	m.hits = append(m.hits, h)
	if h.Time > m.now {
		return Held
	}
	return Counted
}

func (m *model) in(sec int64) bool { return sec > m.now-m.length && sec <= m.now }

func (m *model) check(t *testing.T, s *logtally.Snapshot, maxPaths int, exactPaths bool, maxVisitors int) {
	t.Helper()
	var requests, pageviews, rejected int64
	visitors := map[uint64]bool{}
	paths := map[string]int64{}
	// The window never goes back: what is behind it can go.
	m.hits = slices.DeleteFunc(m.hits, func(h logtally.Hit) bool { return h.Time <= m.now-m.length })
	m.rejected = slices.DeleteFunc(m.rejected, func(sec int64) bool { return sec <= m.now-m.length })
	for _, h := range m.hits {
		if !m.in(h.Time) {
			continue
		}
		requests++
		if h.PageView {
			pageviews++
			visitors[h.Visitor] = true
			paths[string(h.Path)]++
		}
	}
	for _, sec := range m.rejected {
		if m.in(sec) {
			rejected++
		}
	}
	gotVisitors := s.Visitors
	if s.Approximate {
		m.approximate++
		// Under a few dozen visitors, the sketch's linear counting is off
		// by one at most (two of them in one register of 16,384).
		if d := gotVisitors - int64(len(visitors)); d >= -1 && d <= 0 {
			gotVisitors = int64(len(visitors))
		}
	}
	if s.Requests != requests || s.PageViews != pageviews || gotVisitors != int64(len(visitors)) || s.Rejected != rejected {
		t.Fatalf("now %d: got requests/pageviews/visitors/rejected %d/%d/%d/%d (approximate %v), want %d/%d/%d/%d", m.now,
			s.Requests, s.PageViews, s.Visitors, s.Rejected, s.Approximate, requests, pageviews, len(visitors), rejected)
	}
	if !s.Approximate && len(visitors) > maxVisitors {
		t.Fatalf("now %d: %d visitors counted exactly, over the cap %d", m.now, len(visitors), maxVisitors)
	}
	if want := time.Unix(m.now+1, 0).UTC(); !s.To.Equal(want) {
		t.Fatalf("To = %v, want %v", s.To, want)
	}
	if len(s.Pages) > maxPaths {
		t.Fatalf("now %d: %d pages, more than the cap %d", m.now, len(s.Pages), maxPaths)
	}
	for i, p := range s.Pages {
		if i > 0 && (p.PageViews > s.Pages[i-1].PageViews ||
			p.PageViews == s.Pages[i-1].PageViews && p.Path < s.Pages[i-1].Path) {
			t.Fatalf("now %d: pages out of order: %v", m.now, s.Pages)
		}
		if p.PageViews <= 0 || p.PageViews > paths[p.Path] {
			t.Fatalf("now %d: %s = %d, true count %d", m.now, p.Path, p.PageViews, paths[p.Path])
		}
	}
	if exactPaths { // no path was ever folded
		if len(s.Pages) != len(paths) {
			t.Fatalf("now %d: %d pages, want %d", m.now, len(s.Pages), len(paths))
		}
		for _, p := range s.Pages {
			if paths[p.Path] != p.PageViews {
				t.Fatalf("now %d: %s = %d, want %d", m.now, p.Path, p.PageViews, paths[p.Path])
			}
		}
	}
}

func TestSeed(t *testing.T) {
	w := New(Config{Length: 2 * time.Minute}, t0)
	w.Seed(t0.Unix()-200, 5, 5, []uint64{1}, map[string]int64{"/gone": 5}) // before the window
	w.Seed(t0.Unix()-61, 4, 3, []uint64{1, 2}, map[string]int64{"/a": 3})
	w.Seed(t0.Unix()+59, 2, 2, []uint64{2, 3}, map[string]int64{"/a": 1, "/b": 1}) // clamped to now
	s := publish(w)
	if s.Requests != 6 || s.PageViews != 5 || s.Visitors != 3 {
		t.Fatalf("seeded: %+v, want 6 requests, 5 page views, 3 visitors", s)
	}
	if want := []logtally.PageCount{{Path: "/a", PageViews: 4}, {Path: "/b", PageViews: 1}}; !slices.Equal(s.Pages, want) {
		t.Errorf("pages = %v, want %v", s.Pages, want)
	}
	w.Advance(t0.Add(60 * time.Second)) // the minute seeded at -61 leaves
	if s := publish(w); s.Requests != 2 || s.Visitors != 2 {
		t.Errorf("after slide: %+v, want 2 requests, 2 visitors", s)
	}
}

func TestSeedRejected(t *testing.T) {
	w := New(Config{Length: 2 * time.Minute}, t0)
	w.SeedRejected(t0.Unix()-200, 5) // before the window
	w.SeedRejected(t0.Unix()-61, 3)
	w.SeedRejected(t0.Unix()+59, 2) // clamped to now
	w.Reject()
	if s := publish(w); s.Rejected != 6 {
		t.Fatalf("seeded: %d rejected, want 6", s.Rejected)
	}
	w.Advance(t0.Add(60 * time.Second)) // the minute seeded at -61 leaves
	if s := publish(w); s.Rejected != 3 {
		t.Errorf("after slide: %d rejected, want 3", s.Rejected)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, c := range []Config{
		{Length: 1500 * time.Millisecond, MaxPaths: 1, MaxVisitors: 1},
		{Length: time.Second, MaxSkew: -time.Second, MaxPaths: 1, MaxVisitors: 1},
		{Length: time.Second, MaxPaths: 0, MaxVisitors: 1},
		{Length: time.Second, MaxPaths: 1, MaxVisitors: 0},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestAddDoesNotAllocate checks BenchmarkAdd's 0 allocs/op in the normal test
// run, on a small window that has gone round a few times. (A path that is
// new to the window, or folded into the table, takes one string.)
func TestAddDoesNotAllocate(t *testing.T) {
	w := New(Config{Length: 10 * time.Second, MaxSkew: 5 * time.Second}, t0)
	paths := make([][]byte, 80)
	for i := range paths {
		paths[i] = fmt.Appendf(nil, "/p%d", i)
	}
	i, sec := 0, t0.Unix()
	next := func() {
		if i%100 == 0 {
			sec++
			w.Advance(time.Unix(sec, 0))
		}
		w.Add(logtally.Hit{Time: sec - int64(i%7) + int64(i%3), PageView: i%4 > 0, Visitor: mix(uint64(i % 300)), Path: paths[i%len(paths)]})
		i++
	}
	for range 5000 {
		next()
	}
	if n := testing.AllocsPerRun(2000, next); n != 0 {
		t.Errorf("Add: %v allocs per line, want 0", n)
	}
}

// mix spreads small integers over 64 bits (splitmix64's finalizer), as
// visitor hashes are spread, for the sketches' sake.
func mix(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
