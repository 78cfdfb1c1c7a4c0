package counter

import (
	"cmp"
	"math/bits"
	"slices"
)

// Item is one key of a ratio: the counts of the numerator and denominator
// counters under that key, and their ratio.
type Item struct {
	Key         string  `json:"key"`
	Numerator   int64   `json:"numerator"`
	Denominator int64   `json:"denominator"`
	Ratio       float64 `json:"ratio"` // set by Rank
}

// Rank returns the items whose denominator is at least minDen, with Ratio
// set, ordered by ratio, largest first, then by denominator, largest first,
// then by key: at most limit of them, or all when limit <= 0. A minimum
// denominator keeps one click on one show from topping the list; items with
// a denominator under 1 or a negative numerator have no ratio and are left
// out whatever minDen. Ratios are compared exactly, not as floats. items is
// not modified.
func Rank(items []Item, minDen int64, limit int) []Item {
	minDen = max(minDen, 1)
	out := make([]Item, 0, len(items))
	for _, it := range items {
		if it.Denominator >= minDen && it.Numerator >= 0 {
			it.Ratio = float64(it.Numerator) / float64(it.Denominator)
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b Item) int {
		if c := compareRatio(b, a); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Denominator, a.Denominator); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if limit > 0 && len(out) > limit {
		out = slices.Clip(out[:limit])
	}
	return out
}

// compareRatio compares a.Numerator/a.Denominator with b's, exactly: by
// cross products in 128 bits, which counts up to 2^63 cannot overflow.
// Both denominators are positive and both numerators non-negative.
func compareRatio(a, b Item) int {
	ahi, alo := bits.Mul64(uint64(a.Numerator), uint64(b.Denominator))
	bhi, blo := bits.Mul64(uint64(b.Numerator), uint64(a.Denominator))
	if c := cmp.Compare(ahi, bhi); c != 0 {
		return c
	}
	return cmp.Compare(alo, blo)
}
