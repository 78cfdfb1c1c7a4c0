package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
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
