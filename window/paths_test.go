package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// TestPathTableInvariants drives a small table with random adds and removes
// and checks its structure after each: buckets strictly ascending, every
// entry's count the sum of its outstanding refs, own the sum of the refs of
// its generation, and never more than max paths.
func TestPathTableInvariants(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			max := 1 + rng.IntN(8)
			tab := newPathTable(max)
			var refs []pathRef
			for range 3000 {
				if len(refs) > 0 && rng.IntN(5) < 2 {
					i := rng.IntN(len(refs))
					tab.remove(refs[i])
					refs[i] = refs[len(refs)-1]
					refs = refs[:len(refs)-1]
				} else {
					path := fmt.Appendf(nil, "/p%d", rng.IntN(2*max+3))
					r := tab.add(path, int64(1+rng.IntN(3)))
					tab.keep(r)
					refs = append(refs, r)
				}
				checkTable(t, tab, refs)
			}
		})
	}
}

func checkTable(t *testing.T, tab *pathTable, refs []pathRef) {
	t.Helper()
	count := map[int32]int64{}
	own := map[int32]int64{}
	live := map[int32]int32{}
	stale := 0
	for _, r := range refs {
		count[int32(r.id)] += int64(r.n)
		if r.gen == tab.entries[r.id].gen {
			own[int32(r.id)] += int64(r.n)
			live[int32(r.id)]++
		} else {
			stale++
		}
	}
	if tab.refs != len(refs) || tab.stale != stale {
		t.Fatalf("table counts %d refs, %d stale; want %d, %d", tab.refs, tab.stale, len(refs), stale)
	}
	if tab.len() > tab.max {
		t.Fatalf("%d paths, max %d", tab.len(), tab.max)
	}
	seen := 0
	prev := int64(0)
	last := int32(nilID)
	for b := tab.minB; b != nilID; b = tab.buckets[b].next {
		bk := tab.buckets[b]
		if bk.count <= prev || bk.prev != last || bk.head == nilID {
			t.Fatalf("bucket %d: %+v after count %d, bucket %d", b, bk, prev, last)
		}
		for id := bk.head; id != nilID; id = tab.entries[id].next {
			e := tab.entries[id]
			seen++
			if e.bucket != b || count[id] != bk.count || own[id] != e.own || live[id] != e.refs || tab.index[e.path] != id {
				t.Fatalf("entry %d %+v in bucket count %d: refs count %d own %d", id, e, bk.count, count[id], own[id])
			}
		}
		prev, last = bk.count, b
	}
	if last != tab.maxB || seen != tab.len() || seen != len(count) {
		t.Fatalf("maxB %d, last %d; %d entries linked, %d indexed, %d referenced", tab.maxB, last, seen, tab.len(), len(count))
	}
}

// TestHeavyHitterSurvivesFlood floods a window with the default cap of
// 100,000 paths with a million random paths; one path with 1% of the page views must stay in
// the table all along and keep an exact count, and so must one with 0.5%.
func TestHeavyHitterSurvivesFlood(t *testing.T) {
	n, maxPaths := 1_000_000, DefaultConfig().MaxPaths
	if testing.Short() {
		n, maxPaths = 100_000, 10_000
	}
	const length = 60
	w := New(Config{Length: length * time.Second, MaxPaths: maxPaths}, t0)
	rng := rand.New(rand.NewPCG(4, 4))
	perSec := n / 200 // 200 seconds: the window slides 140 times during the flood
	heavy := map[string]int{"/heavy": 100, "/half": 200}
	inWindow := map[string][]int64{} // path -> seconds of its page views
	var buf []byte
	sec := t0.Unix()
	for i := range n {
		if i > 0 && i%perSec == 0 {
			sec++
			w.Advance(time.Unix(sec, 0))
		}
		path := ""
		for p, every := range heavy {
			if i%every == every/100 { // 1 and 2: never the same line
				path = p
			}
		}
		if path != "" {
			inWindow[path] = append(inWindow[path], sec)
			w.Add(logtally.Hit{Time: sec, PageView: true, Visitor: uint64(i), Path: []byte(path)})
			continue
		}
		buf = fmt.Appendf(buf[:0], "/random/%d", rng.Uint64())
		w.Add(logtally.Hit{Time: sec, PageView: true, Visitor: uint64(i), Path: buf})
		if i > 0 && i%(perSec/2) == 0 {
			for p := range heavy {
				inWindow[p] = slices.DeleteFunc(inWindow[p], func(s int64) bool { return s <= sec-length })
				want := int64(len(inWindow[p]))
				id, ok := w.paths.index[p]
				if !ok || w.paths.entries[id].own != want || w.paths.entries[id].gen != 1 {
					t.Fatalf("line %d: %s held=%v own=%d gen=%d, want %d", i, p, ok, w.paths.entries[id].own, w.paths.entries[id].gen, want)
				}
			}
		}
	}
	s := publish(w)
	if s.Pages[0].Path != "/heavy" || s.Pages[1].Path != "/half" || w.paths.len() != maxPaths {
		t.Fatalf("top pages %v, %d paths; want /heavy then /half, the cap", s.Pages[:2], w.paths.len())
	}
	if w.paths.folded < int64(n/4) {
		t.Fatalf("only %d paths folded: the flood did not fill the table", w.paths.folded)
	}
}

// checkWindow checks the window's path table against the refs its seconds
// hold, and its visitor bookkeeping against its lists.
func checkWindow(t *testing.T, w *Window) {
	t.Helper()
	var refs []pathRef
	entries, stale := 0, 0
	for _, s := range w.slots {
		refs = append(refs, s.paths...)
		for _, v := range s.visitors {
			entries++
			if w.visitors.exact[v] != s.sec {
				stale++
			}
		}
	}
	checkTable(t, w.paths, refs)
	if w.visitors.entries != entries || w.visitors.stale != stale {
		t.Fatalf("window counts %d visitor entries, %d stale; want %d, %d", w.visitors.entries, w.visitors.stale, entries, stale)
	}
}

// TestFloodKeepsListsBounded floods a window with random paths from few
// visitors, which makes every page view a new ref and a visitor's new latest
// second. The lists must stay in proportion to the paths and visitors held,
// the counts must stay right, and once the flood has left the window the
// table must be empty.
func TestFloodKeepsListsBounded(t *testing.T) {
	n, maxPaths, visitors := 2_000_000, 10_000, 10_000
	if testing.Short() {
		n = 300_000
	}
	const length = 100
	w := New(Config{Length: length * time.Second, MaxPaths: maxPaths}, t0)
	w.visitors.minStale = 50_000
	rng := rand.New(rand.NewPCG(5, 5))
	perSec := n / 300
	n = perSec * 300 // whole seconds
	var buf []byte
	sec := t0.Unix()
	maxRefs, maxVisitors, compactions := 0, 0, 0
	for i := range n {
		if i > 0 && i%perSec == 0 {
			sec++
			w.Advance(time.Unix(sec, 0))
		}
		after := w.refs.after
		buf = fmt.Appendf(buf[:0], "/random/%d", rng.Uint64())
		w.Add(logtally.Hit{Time: sec, PageView: true, Visitor: mix(uint64(i % visitors)), Path: buf})
		if w.refs.after != after {
			compactions++
		}
		maxRefs = max(maxRefs, w.paths.refs)
		maxVisitors = max(maxVisitors, w.visitors.entries)
	}
	checkWindow(t, w)
	s := publish(w)
	if want := int64(perSec * length); s.PageViews != want || s.Visitors != int64(visitors) {
		t.Fatalf("%d page views, %d visitors; want %d, %d", s.PageViews, s.Visitors, want, visitors)
	}
	// Bounds: ten blocks and an edge of stale refs per entry, doubled, plus
	// the live ones; visitors twice over plus the least stale worth a pass.
	if bound := 2*(11*maxPaths+maxPaths) + perSec; maxRefs > bound || compactions == 0 {
		t.Errorf("up to %d refs (bound %d) after %d compactions, from %d page views", maxRefs, bound, compactions, n)
	}
	if bound := 2*visitors + w.visitors.minStale + perSec; maxVisitors > bound {
		t.Errorf("up to %d visitor entries (bound %d)", maxVisitors, bound)
	}
	w.Advance(time.Unix(sec+length, 0))
	checkWindow(t, w)
	if w.paths.len() != 0 || w.paths.refs != 0 || w.visitors.entries != 0 || len(w.visitors.exact) != 0 {
		t.Fatalf("after the flood left: %d paths, %d refs, %d visitor entries, %d visitors",
			w.paths.len(), w.paths.refs, w.visitors.entries, len(w.visitors.exact))
	}
}
