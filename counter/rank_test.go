package counter

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRank(t *testing.T) {
	items := []Item{
		{Key: "1", Numerator: 1, Denominator: 1},     // 1.0 but shown once
		{Key: "2", Numerator: 30, Denominator: 100},  // 0.3
		{Key: "3", Numerator: 60, Denominator: 200},  // 0.3, more shows
		{Key: "4", Numerator: 50, Denominator: 1000}, // 0.05
		{Key: "5", Numerator: 0, Denominator: 500},   // 0
		{Key: "6", Numerator: 150, Denominator: 100}, // 1.5: more clicks than shows
		{Key: "7", Numerator: 30, Denominator: 100},  // 0.3, as 2
		{Key: "8", Numerator: 5, Denominator: 0},     // no shows: no ratio
		{Key: "9", Numerator: -1, Denominator: 100},  // not a count
	}
	keys := func(items []Item) []string {
		var k []string
		for _, it := range items {
			k = append(k, it.Key)
		}
		return k
	}
	tests := []struct {
		name  string
		min   int64
		limit int
		want  []string
	}{
		{"all", 0, 0, []string{"6", "1", "3", "2", "7", "4", "5"}},
		{"min 100", 100, 0, []string{"6", "3", "2", "7", "4", "5"}},
		{"min 200", 200, 0, []string{"3", "4", "5"}},
		{"limit", 100, 3, []string{"6", "3", "2"}},
		{"limit past the end", 1000, 5, []string{"4"}},
		{"none", 10_000, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(items)
			got := Rank(items, tt.min, tt.limit)
			if !slices.Equal(keys(got), tt.want) {
				t.Errorf("got %q, want %q", keys(got), tt.want)
			}
			if !slices.Equal(items, before) {
				t.Error("Rank changed its input")
			}
			for _, it := range got {
				if want := float64(it.Numerator) / float64(it.Denominator); it.Ratio != want {
					t.Errorf("%s: Ratio = %v, want %v", it.Key, it.Ratio, want)
				}
			}
		})
	}
}

// TestRankExact checks that ratios too close for float64 to tell apart
// are still ordered right.
func TestRankExact(t *testing.T) {
	const big = 1 << 62
	items := []Item{
		{Key: "a", Numerator: big - 1, Denominator: big},
		{Key: "b", Numerator: big, Denominator: big},
		{Key: "c", Numerator: big - 2, Denominator: big - 1},
		{Key: "d", Numerator: math.MaxInt64, Denominator: math.MaxInt64},
	}
	if float64(items[0].Numerator)/float64(items[0].Denominator) != 1 {
		t.Fatal("the test needs ratios that float64 rounds to 1")
	}
	got := Rank(items, 1, 0)
	var keys []string
	for _, it := range got {
		keys = append(keys, it.Key)
	}
	// d and b are 1, d with the larger denominator; then a = 1-1/2^62,
	// then c = 1-1/(2^62-1).
	if want := []string{"d", "b", "a", "c"}; !slices.Equal(keys, want) {
		t.Errorf("got %q, want %q", keys, want)
	}
}

// TestRankOrder checks Rank's order on random items against a sort by
// rational numbers written out in full.
func TestRankOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		var items []Item
		for i := range 50 {
			items = append(items, Item{Key: string(rune('a' + i%26)), Numerator: r.Int64N(20), Denominator: r.Int64N(20)})
		}
		got := Rank(items, 3, 0)
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			an, bn := a.Numerator*b.Denominator, b.Numerator*a.Denominator
			ok := an > bn || an == bn && (a.Denominator > b.Denominator || a.Denominator == b.Denominator && a.Key <= b.Key)
			if !ok {
				t.Fatalf("%+v before %+v", a, b)
			}
		}
		n := 0
		for _, it := range items {
			if it.Denominator >= 3 {
				n++
			}
		}
		if len(got) != n {
			t.Fatalf("got %d items, want the %d with a denominator of 3 or more", len(got), n)
		}
	}
}
