package window

import (
	"math"
	"math/bits"
)

// sketchP is the sketch's precision: 2^14 registers, a standard error of
// 1.04/sqrt(2^14) = 0.81%.
const sketchP = 14

const (
	sketchM     = 1 << sketchP
	sketchRanks = 64 - sketchP + 1 // largest rank a 64-bit hash can give
)

// sketch is a HyperLogLog that slides (after Chabchoub and Hébrail's sliding
// HyperLogLog). A plain register keeps the largest rank seen; here a
// register keeps, for every rank, the latest second that produced it. The
// register's value for a window is then the largest rank whose latest second
// is still inside, so visitors leave the estimate when their last page view
// leaves the window, as they leave the exact count. Out-of-order seconds are
// fine: a register only ever keeps the later second.
//
// It takes 2^14 * 52 * 8 bytes = 7 MB, whatever the number of visitors.
type sketch struct {
	last [sketchM][sketchRanks + 1]int64 // [register][rank] -> latest second; 0 is never (the epoch itself is not a useful window)
	// ranks has bit r of a register set once rank r was seen there, so
	// that estimate looks only at those, a few per register, rather than
	// at all 51.
	ranks [sketchM]uint64
}

// add records visitor v (a well-mixed hash) at second sec.
func (s *sketch) add(v uint64, sec int64) {
	i := v >> (64 - sketchP)
	rank := bits.LeadingZeros64(v<<sketchP|1<<(sketchP-1)) + 1
	if reg := &s.last[i]; sec > reg[rank] {
		reg[rank] = sec
		s.ranks[i] |= 1 << rank
	}
}

// estimate returns the estimated number of distinct visitors with a second
// after start. It reads the whole sketch, so it is called once per publish,
// not per line.
func (s *sketch) estimate(start int64) int64 {
	var sum float64
	zeros := 0
	for i, seen := range s.ranks {
		reg := &s.last[i]
		r := 0
		for seen != 0 {
			top := 63 - bits.LeadingZeros64(seen)
			if reg[top] > start {
				r = top
				break
			}
			seen &^= 1 << top
		}
		if r == 0 {
			zeros++
		}
		sum += math.Ldexp(1, -r)
	}
	const m = float64(sketchM)
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting for small counts
	}
	return int64(math.Round(e))
}
