package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/axiomhq/hyperloglog"
)

// TestUnionMatchesMerge checks that a union of stored sketches estimates
// what merging them with the library does, on both sides of the sparse
// sketch's limit and with dense sketches among them.
func TestUnionMatchesMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		sketches, visitors, pool int // pool: distinct visitors drawn from
	}{
		{1, 1, 10}, {5, 3, 10}, {5, 50, 1_000}, {15, 900, 200_000}, {5, 900, 2_000},
		{15, 3_000, 1_000_000}, {3, 30_000, 1_000_000}, {60, 400, 200_000},
	} {
		t.Run(fmt.Sprint(tc.sketches, "x", tc.visitors), func(t *testing.T) {
			var u union
			want := hyperloglog.New14()
			for range tc.sketches {
				sk := hyperloglog.New14()
				for range rng.IntN(tc.visitors) + 1 {
					sk.InsertHash(rng.Uint64N(uint64(tc.pool)) * 0x9e3779b97f4a7c15)
				}
				if rng.IntN(2) == 0 {
					sk.Estimate() // leaves the tmp set empty, as a stored minute may be
				}
				b, err := sk.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				var stored hyperloglog.Sketch
				if err := stored.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
				want.Merge(&stored)
				if err := u.add(b); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := u.estimate()
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			if w := int64(want.Estimate()); got != w {
				t.Errorf("got %d visitors, want %d", got, w)
			}
		})
	}
}

func TestUnionRefusesCorruptSketch(t *testing.T) {
	sk := hyperloglog.New14()
	for i := range uint64(500) {
		sk.InsertHash(i * 0x9e3779b97f4a7c15)
	}
	sk.Estimate()
	b, _ := sk.MarshalBinary()
	for _, bad := range [][]byte{b[:len(b)-1], append(b[:len(b):len(b)], 0), b[:9]} {
		var u union
		err := u.add(bad)
		if err == nil {
			_, _, err = u.estimate()
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d bytes: got %v, want ErrCorrupt", len(bad), err)
		}
	}
}

// TestUnionOfSetsMatchesSketches: a minute's visitor set, added to a union
// in place of its sketch (see record.set), adds what the sketch it stands
// for (setSketch) adds, beside sketches and other sets: sparse and dense,
// and with hashes whose 11 bits under the top 14 are zero, whose keys fall
// out of the sets' order.
func TestUnionOfSetsMatchesSketches(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		minutes, visitors int
		rare              int // visitors of each minute whose 11 bits under the top 14 are zero
	}{
		{1, 1, 0}, {1, 3, 1}, {5, 6, 1}, {15, 900, 5}, {5, 2047, 2}, {3, 2048, 2}, {4, 5000, 3},
		{12, 30000, 3}, {3, 120000, 0}, // dense sets into one sketch, registers rebased along the way
	} {
		t.Run(fmt.Sprint(tc.minutes, "x", tc.visitors), func(t *testing.T) {
			var sets, sketches union
			var buf sketchBuf
			for m := range tc.minutes {
				set := make([]uint64, 0, tc.visitors)
				for i := range tc.visitors {
					h := rng.Uint64()
					if i < tc.rare {
						h &^= (1<<11 - 1) << (64 - 25)
					}
					set = append(set, h)
				}
				slices.Sort(set)
				set = slices.Compact(set)
				dense := len(set) >= denseFrom
				sk, err := setSketch(set, dense, &buf)
				if err != nil {
					t.Fatal(err)
				}
				if err := sketches.add(sk); err != nil {
					t.Fatal(err)
				}
				if m%2 == 0 { // every other minute by its sketch in both
					if err := sets.add(sk); err != nil {
						t.Fatal(err)
					}
					continue
				}
				sets.addSet(encodeHashes(set), dense)
			}
			got, _, err := sets.estimate()
			want, _, err2 := sketches.estimate()
			if err != nil || err2 != nil || got != want {
				t.Errorf("sets and sketches: %d visitors (%v), sketches alone %d (%v)", got, err, want, err2)
			}
		})
	}
}
