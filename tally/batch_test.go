package tally

import (
	"github.com/logtally/logtally"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).Unix()

func hit(sec int64, path string, status int, visitor uint64) *logtally.Hit {
	return &logtally.Hit{Time: t0 + sec, Path: []byte(path), Status: status, Bytes: 10, PageView: visitor != 0, Visitor: visitor}
}

// delta is a Delta with its views turned into path names, for comparison.
type delta struct {
	Requests, PageViews, Bytes, Rejected int64
	Status                               [5]int64
	Visitors                             []uint64
	Views                                []string
}

func collect(b *Batch, seq func(func(int64, *Delta) bool)) map[int64]delta {
	out := map[int64]delta{}
	for k, d := range seq {
		v := delta{Requests: d.Requests, PageViews: d.PageViews, Bytes: d.Bytes, Rejected: d.Rejected, Status: d.Status,
			Visitors: slices.Clone(d.Visitors)}
		for _, id := range d.Views {
			v.Views = append(v.Views, b.Paths()[id])
		}
		out[k] = v
	}
	return out
}

func TestBatchAdd(t *testing.T) {
	b := NewBatch()
	if !b.Empty() {
		t.Fatal("new batch not empty")
	}
	b.Add(hit(0, "/a", 200, 1), true)
	b.Add(hit(1, "/b", 200, 2), false)
	b.Add(hit(1, "/x.css", 304, 0), true)
	b.Add(hit(65, "/a", 404, 0), true)  // next minute, not a page view
	b.Add(hit(-1, "/a", 200, 3), false) // the minute before t0
	b.Reject(0)                         // counted in the newest line's minute
	b.AddLines(6)
	b.SetPosition("f", 100)
	b.SetPosition("f", 200)
	b.SetWindowStart(t0 - 600)

	m0, m1, mPrev := t0/60, t0/60+1, t0/60-1
	want := map[int64]delta{
		mPrev: {Requests: 1, PageViews: 1, Bytes: 10, Status: [5]int64{0, 1}, Visitors: []uint64{3}, Views: []string{"/a"}},
		m0: {Requests: 3, PageViews: 2, Bytes: 30, Status: [5]int64{0, 2, 1}, Visitors: []uint64{1, 2},
			Views: []string{"/a", "/b"}},
		m1: {Requests: 1, Bytes: 10, Rejected: 1, Status: [5]int64{0, 0, 0, 1}},
	}
	got := collect(b, b.Minutes())
	if !equalDeltas(got, want) {
		t.Errorf("minutes = %+v\nwant %+v", got, want)
	}
	if keys := slices.Collect(func(yield func(int64) bool) {
		for k := range b.Minutes() {
			if !yield(k) {
				return
			}
		}
	}); !slices.IsSorted(keys) {
		t.Errorf("minutes out of order: %v", keys)
	}
	seconds := collect(b, b.Seconds())
	if len(seconds) != 3 || seconds[t0].PageViews != 1 || seconds[t0+1].Requests != 1 || seconds[t0+65].Requests != 1 {
		t.Errorf("live seconds = %+v, want t0 (1 page view), t0+1 (the asset), t0+65", seconds)
	}
	if b.Lines() != 6 || b.MinuteCount() != 3 || b.WindowStart() != t0-600 {
		t.Errorf("lines %d, minutes %d, window start %d", b.Lines(), b.MinuteCount(), b.WindowStart())
	}
	if got := b.Positions(); !maps.Equal(got, map[string]int64{"f": 200}) {
		t.Errorf("positions = %v", got)
	}

	paths := slices.Clone(b.Paths())
	b.Reset()
	if !b.Empty() || b.Lines() != 0 || b.MinuteCount() != 0 {
		t.Fatal("not empty after Reset")
	}
	b.Add(hit(0, "/b", 200, 9), false)
	if !slices.Equal(b.Paths(), paths) {
		t.Errorf("paths after Reset = %v, want the numbering kept: %v", b.Paths(), paths)
	}
}

func TestBatchRejectBeforeAnyLine(t *testing.T) {
	b := NewBatch()
	b.Reject(t0 + 125)
	got := collect(b, b.Minutes())
	if d, ok := got[(t0+125)/60]; !ok || d.Rejected != 1 || len(got) != 1 {
		t.Errorf("minutes = %+v, want one rejected line in the fallback's minute", got)
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{{59, 60, 0}, {60, 60, 1}, {-1, 60, -1}, {-60, 60, -1}, {-61, 60, -2}} {
		if got := logtally.FloorDiv(tt.a, tt.b); got != tt.want {
			t.Errorf("logtally.FloorDiv(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func equalDeltas(a, b map[int64]delta) bool {
	return maps.EqualFunc(a, b, func(x, y delta) bool {
		return x.Requests == y.Requests && x.PageViews == y.PageViews && x.Bytes == y.Bytes &&
			x.Rejected == y.Rejected && x.Status == y.Status && slices.Equal(x.Visitors, y.Visitors) &&
			slices.Equal(x.Views, y.Views)
	})
}

// TestBatchAs: a view made by As holds the batch's lines under another
// site, is the Same as it, and its Also outlives Reset.
func TestBatchAs(t *testing.T) {
	b := NewSiteBatch("counter:click")
	b.SetAlso([]string{"counter:watch"})
	h := logtally.Hit{Time: 120, PageView: true, Visitor: 7, Path: []byte("42")}
	b.Add(&h, false)
	v := b.As("counter:watch")
	if v.Site() != "counter:watch" || len(v.Also()) != 0 || !v.Same(b) || !b.Same(v) || v.MinuteCount() != 1 {
		t.Errorf("view: site %s, also %v, same %v, %d minutes; want counter:watch, none, true, 1",
			v.Site(), v.Also(), v.Same(b), v.MinuteCount())
	}
	if o := NewSiteBatch("counter:click"); o.Same(b) {
		t.Error("another batch of the same site is the Same")
	}
	b.Reset()
	if got := b.Also(); len(got) != 1 || got[0] != "counter:watch" {
		t.Errorf("Also after Reset = %v", got)
	}
}

// TestAddNumbered: hits added by their paths' numbers (PathNumber, then
// AddNumbered) count as the same hits added by Add.
func TestAddNumbered(t *testing.T) {
	hits := []*logtally.Hit{
		hit(0, "/a", 200, 1), hit(1, "/b", 200, 2), hit(1, "/x.css", 304, 0),
		hit(65, "/a", 200, 3), hit(66, "/b", 404, 0), hit(-1, "/c", 200, 4),
	}
	byAdd, byNumber := NewBatch(), NewBatch()
	for i, h := range hits {
		byAdd.Add(h, i%2 == 0)
		id := int32(-1)
		if h.PageView {
			id = byNumber.PathNumber(h.Path)
		}
		byNumber.AddNumbered(h, id, i%2 == 0)
	}
	if got, want := collect(byNumber, byNumber.Minutes()), collect(byAdd, byAdd.Minutes()); !equalDeltas(got, want) {
		t.Errorf("minutes by number = %+v\nwant %+v", got, want)
	}
	if got, want := collect(byNumber, byNumber.Seconds()), collect(byAdd, byAdd.Seconds()); !equalDeltas(got, want) {
		t.Errorf("seconds by number = %+v\nwant %+v", got, want)
	}
	if got, want := byNumber.Paths(), []string{"/a", "/b", "/c"}; !slices.Equal(got, want) {
		t.Errorf("paths = %q, want %q", got, want)
	}
	if got := byNumber.PathNumber([]byte("/b")); got != 1 {
		t.Errorf("PathNumber(/b) = %d, want the number it has, 1", got)
	}
}

// A keys-only batch keeps each minute's views of its keys but not their
// visitors, and the live window's seconds whole; it encodes and decodes as
// any batch does.
func TestBatchKeysOnly(t *testing.T) {
	b := NewSiteBatch("breakdown:browser")
	b.SetKeysOnly(true)
	b.Add(hit(0, "Firefox", 200, 1), true)
	b.Add(hit(1, "Chrome", 200, 2), false)
	b.Add(hit(2, "Firefox", 200, 1), true)
	b.AddLines(3)
	m0 := t0 / 60
	wantMinutes := map[int64]delta{
		m0: {Requests: 3, PageViews: 3, Bytes: 30, Status: [5]int64{0, 3}, Views: []string{"Firefox", "Chrome", "Firefox"}},
	}
	wantSeconds := map[int64]delta{
		t0:     {Requests: 1, PageViews: 1, Bytes: 10, Status: [5]int64{0, 1}, Visitors: []uint64{1}, Views: []string{"Firefox"}},
		t0 + 2: {Requests: 1, PageViews: 1, Bytes: 10, Status: [5]int64{0, 1}, Visitors: []uint64{1}, Views: []string{"Firefox"}},
	}
	check := func(t *testing.T, b *Batch) {
		t.Helper()
		if got := collect(b, b.Minutes()); !maps.EqualFunc(got, wantMinutes, equalDelta) {
			t.Errorf("minutes:\n got %+v\nwant %+v", got, wantMinutes)
		}
		if got := collect(b, b.Seconds()); !maps.EqualFunc(got, wantSeconds, equalDelta) {
			t.Errorf("seconds:\n got %+v\nwant %+v", got, wantSeconds)
		}
	}
	check(t, b)
	enc, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var dec Batch
	if err := dec.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	got := collect(&dec, dec.Minutes())
	if d := got[m0]; d.Requests != 3 || d.PageViews != 3 || len(d.Visitors) != 0 || len(d.Views) != 3 {
		t.Errorf("decoded minute = %+v, want 3 requests, 3 views, no visitors", d)
	}
	b.Reset()
	if !b.KeysOnly() {
		t.Error("KeysOnly() = false after Reset, want true")
	}
}

func equalDelta(a, b delta) bool {
	return a.Requests == b.Requests && a.PageViews == b.PageViews && a.Bytes == b.Bytes && a.Rejected == b.Rejected &&
		a.Status == b.Status && slices.Equal(a.Visitors, b.Visitors) && slices.Equal(a.Views, b.Views)
}

// Adding a keys-only batch's hits as views counted by key and minute
// (AddViews) stores what adding them one by one does, whatever their
// order: the same minutes, counts and views of each key.
func TestBatchAddViewsIsAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"200", "304", "404", "500", "12", "a-longer-key-than-eight"}
	one, tallied := NewSiteBatch("breakdown:status"), NewSiteBatch("breakdown:status")
	one.SetKeysOnly(true)
	tallied.SetKeysOnly(true)
	type at struct {
		minute int64
		key    string
	}
	views := map[at]*Views{}
	for range 5000 {
		h := hit(rng.Int64N(600)-60, keys[rng.IntN(len(keys))], 100+rng.IntN(520), 0)
		h.PageView, h.Bytes = true, rng.Int64N(1000)
		one.Add(h, false)
		k := at{logtally.FloorDiv(h.Time, 60), string(h.Path)}
		if views[k] == nil {
			views[k] = &Views{}
		}
		views[k].Count(h)
	}
	for k, v := range views {
		tallied.AddViews(k.minute, []byte(k.key), v)
	}
	sorted := func(m map[int64]delta) map[int64]delta {
		for k, d := range m {
			slices.Sort(d.Views)
			m[k] = d
		}
		return m
	}
	got, want := sorted(collect(tallied, tallied.Minutes())), sorted(collect(one, one.Minutes()))
	if !maps.EqualFunc(got, want, equalDelta) {
		t.Errorf("minutes by AddViews:\n got %+v\nwant %+v", got, want)
	}
	if got, want := tallied.last, one.last; got != want {
		t.Errorf("newest second %d, want %d", got, want)
	}
	if n := len(collect(tallied, tallied.Seconds())); n != 0 {
		t.Errorf("AddViews kept %d seconds, want none", n)
	}
}

// AddViews refuses a batch that keeps visitors: its minutes would lack
// the hits' visitors.
func TestBatchAddViewsNeedsKeysOnly(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AddViews on a batch that keeps visitors did not panic")
		}
	}()
	NewBatch().AddViews(1, []byte("/"), &Views{N: 1})
}
