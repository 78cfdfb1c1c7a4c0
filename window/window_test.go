package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally/parser"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func pv(sec int64, visitor uint64, path string) Hit {
	return Hit{Time: t0.Unix() + sec, PageView: true, Visitor: visitor, Path: []byte(path)}
}

func other(sec int64) Hit { return Hit{Time: t0.Unix() + sec, Path: []byte("/x.css")} }

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
		s := w.Publish()
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
	if got := w.Publish().Visitors; got != 1 {
		t.Fatalf("visitors = %d, want 1", got)
	}
	w.Advance(t0.Add(7 * time.Second)) // window is -2..+7: -9 and -3 left, -2 stays
	if s := w.Publish(); s.Visitors != 1 || s.PageViews != 1 {
		t.Fatalf("after slide: visitors=%d pageviews=%d, want 1 1", s.Visitors, s.PageViews)
	}
	w.Advance(t0.Add(8 * time.Second))
	if s := w.Publish(); s.Visitors != 0 || s.PageViews != 0 {
		t.Fatalf("after all left: visitors=%d pageviews=%d, want 0 0", s.Visitors, s.PageViews)
	}
}

func TestOldAndFutureHits(t *testing.T) {
	w := New(Config{Length: 10 * time.Second}, t0)
	if w.Add(pv(-10, 1, "/old")) {
		t.Error("hit from before the window was counted")
	}
	if !w.Add(pv(3, 2, "/future")) {
		t.Error("future hit was not held")
	}
	if s := w.Publish(); s.Requests != 0 {
		t.Fatalf("requests = %d before the future second, want 0", s.Requests)
	}
	w.Advance(t0.Add(3 * time.Second))
	s := w.Publish()
	if s.Requests != 1 || s.Visitors != 1 || len(s.Pages) != 1 || s.Pages[0].Path != "/future" {
		t.Fatalf("at +3s: %+v, want the held hit counted", s)
	}
}

func TestPagesOrder(t *testing.T) {
	w := New(Config{}, t0)
	for i, p := range []string{"/b", "/a", "/c", "/b", "/a", "/b"} {
		w.Add(pv(-int64(i), uint64(i), p))
	}
	got := w.Publish().Pages
	want := []PageCount{{"/b", 3}, {"/a", 2}, {"/c", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
}

// TestMatchesBruteForce checks the incremental counts against a recount from
// the raw hits, for random streams and random read times.
func TestMatchesBruteForce(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			const length = 30
			w := New(Config{Length: length * time.Second}, t0)
			var all []Hit
			now := int64(0)
			for range 2000 {
				if rng.IntN(10) == 0 {
					now += int64(rng.IntN(8))
					w.Advance(t0.Add(time.Duration(now) * time.Second))
					check(t, w.Publish(), all, t0.Unix()+now, length)
				}
				h := Hit{
					Time:     t0.Unix() + now - int64(rng.IntN(length+5)) + int64(rng.IntN(3)),
					PageView: rng.IntN(3) > 0,
					Visitor:  uint64(rng.IntN(40)),
					Path:     []byte(fmt.Sprintf("/p%d", rng.IntN(15))),
				}
				if h.Time > t0.Unix()+now-length {
					all = append(all, h) // what the window should hold at some point
				}
				w.Add(h)
			}
		})
	}
}

func check(t *testing.T, s *Snapshot, hits []Hit, now, length int64) {
	t.Helper()
	var requests, pageviews int64
	visitors := map[uint64]bool{}
	paths := map[string]int64{}
	for _, h := range hits {
		if h.Time <= now-length || h.Time > now {
			continue
		}
		requests++
		if h.PageView {
			pageviews++
			visitors[h.Visitor] = true
			paths[string(h.Path)]++
		}
	}
	if s.Requests != requests || s.PageViews != pageviews || s.Visitors != int64(len(visitors)) {
		t.Fatalf("now %d: got %d/%d/%d, want %d/%d/%d", now, s.Requests, s.PageViews, s.Visitors,
			requests, pageviews, len(visitors))
	}
	if len(s.Pages) != len(paths) {
		t.Fatalf("now %d: %d pages, want %d", now, len(s.Pages), len(paths))
	}
	for _, p := range s.Pages {
		if paths[p.Path] != p.PageViews {
			t.Fatalf("now %d: %s = %d, want %d", now, p.Path, p.PageViews, paths[p.Path])
		}
	}
}

func TestClassify(t *testing.T) {
	rules := DefaultRules()
	rules.Init()
	rec := func(method, path string, status int, ua string) *parser.Record {
		return &parser.Record{Host: []byte("192.0.2.1"), Time: t0, Method: []byte(method),
			Path: []byte(path), Status: status, UserAgent: []byte(ua)}
	}
	const browser = "Mozilla/5.0 (Windows NT 10.0) Firefox/120.0"
	tests := []struct {
		name string
		rec  *parser.Record
		want bool
	}{
		{"page", rec("GET", "/blog/post", 200, browser), true},
		{"redirect", rec("GET", "/old", 301, browser), true},
		{"dotted page", rec("GET", "/v1.2/notes", 200, browser), true},
		{"not found", rec("GET", "/missing", 404, browser), false},
		{"post", rec("POST", "/login", 200, browser), false},
		{"asset", rec("GET", "/static/app.CSS", 200, browser), false},
		{"image", rec("GET", "/img/logo.png", 200, browser), false},
		{"crawler", rec("GET", "/", 200, "Mozilla/5.0 (compatible; Googlebot/2.1)"), false},
		{"curl", rec("GET", "/", 200, "curl/8.5.0"), false},
		{"no agent", rec("GET", "/", 200, "-"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rules.Classify(tt.rec).PageView; got != tt.want {
				t.Errorf("PageView = %v, want %v", got, tt.want)
			}
		})
	}
	bots := DefaultRules()
	bots.IncludeBots = true
	bots.Init()
	if !bots.Classify(rec("GET", "/", 200, "Googlebot")).PageView {
		t.Error("IncludeBots: crawler page view not counted")
	}
}

func TestVisitorKey(t *testing.T) {
	a := &parser.Record{Host: []byte("192.0.2.1"), Method: []byte("GET"), Path: []byte("/"), Status: 200, UserAgent: []byte("Firefox")}
	b := *a
	b.UserAgent = []byte("Chrome")
	for _, tt := range []struct {
		key  string
		same bool
	}{{KeyHost, true}, {KeyHostUA, false}} {
		r := DefaultRules()
		r.VisitorKey = tt.key
		r.Init()
		if got := r.Classify(a).Visitor == r.Classify(&b).Visitor; got != tt.same {
			t.Errorf("%s: same visitor = %v, want %v", tt.key, got, tt.same)
		}
	}
}

func TestSeed(t *testing.T) {
	w := New(Config{Length: 2 * time.Minute}, t0)
	w.Seed(t0.Unix()-200, 5, 5, []uint64{1}, map[string]int64{"/gone": 5}) // before the window
	w.Seed(t0.Unix()-61, 4, 3, []uint64{1, 2}, map[string]int64{"/a": 3})
	w.Seed(t0.Unix()+59, 2, 2, []uint64{2, 3}, map[string]int64{"/a": 1, "/b": 1}) // clamped to now
	s := w.Publish()
	if s.Requests != 6 || s.PageViews != 5 || s.Visitors != 3 {
		t.Fatalf("seeded: %+v, want 6 requests, 5 page views, 3 visitors", s)
	}
	if want := []PageCount{{"/a", 4}, {"/b", 1}}; !slices.Equal(s.Pages, want) {
		t.Errorf("pages = %v, want %v", s.Pages, want)
	}
	w.Advance(t0.Add(60 * time.Second)) // the minute seeded at -61 leaves
	if s := w.Publish(); s.Requests != 2 || s.Visitors != 2 {
		t.Errorf("after slide: %+v, want 2 requests, 2 visitors", s)
	}
}
