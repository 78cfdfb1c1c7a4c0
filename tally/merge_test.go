package tally

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMerge: a batch merged from two holds what one batch of both's lines
// holds, as multisets per minute and second, whatever the paths' numbers.
func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{"/a", "/b", "/c", "/d"}
	whole, left, right := NewBatch(), NewBatch(), NewBatch()
	right.Add(hit(0, "/d", 200, 9), true) // so that the two number paths apart
	whole.Add(hit(0, "/d", 200, 9), true)
	for i := range 500 {
		sec := int64(rng.IntN(300)) - 60
		var visitor uint64
		if rng.IntN(4) > 0 {
			visitor = 1 + rng.Uint64N(20)
		}
		h := hit(sec, paths[rng.IntN(len(paths))], 100*(1+rng.IntN(5)), visitor)
		live := sec > 200
		whole.Add(h, live)
		if i%3 == 0 {
			left.Add(h, live)
		} else {
			right.Add(h, live)
		}
	}
	left.Merge(right)
	for name, seq := range map[string][2]map[int64]delta{
		"minutes": {collect(left, left.Minutes()), collect(whole, whole.Minutes())},
		"seconds": {collect(left, left.Seconds()), collect(whole, whole.Seconds())},
	} {
		got, want := sortedViews(seq[0]), sortedViews(seq[1])
		if !equalDeltas(got, want) {
			t.Errorf("%s merged = %+v\nwant %+v", name, got, want)
		}
	}
	if got := collect(right, right.Minutes()); len(got) == 0 {
		t.Error("Merge emptied the batch it read")
	}
}

// sortedViews sorts each delta's visitors and views, which a merge
// appends in another order than the lines came.
func sortedViews(m map[int64]delta) map[int64]delta {
	for k, d := range m {
		slices.Sort(d.Visitors)
		slices.Sort(d.Views)
		m[k] = d
	}
	return m
}
