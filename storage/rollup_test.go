package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/axiomhq/hyperloglog"
)

// TestSparseKeyMatchesInsert: a sketch that sketchOf builds from its keys
// is the one the library builds inserting the hashes one by one, sparse
// below denseFrom keys and dense from it, with the same estimate.
func TestSparseKeyMatchesInsert(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 300, denseFrom - 1, denseFrom + 10, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			hashes := make([]uint64, n)
			for i := range hashes {
				hashes[i] = rng.Uint64()
				if i%5 == 0 {
					hashes[i] &^= 0x7ff << 39 // the 11 bits under the top 14 zero
				}
			}
			want, wantDense := hyperloglog.New14(), hyperloglog.NewNoSparse()
			for _, h := range hashes {
				want.InsertHash(h)
				wantDense.InsertHash(h)
			}
			keys := want.Estimate() // of a sparse sketch: its keys
			got, dense := sketchOf(hashes)
			if dense != (keys >= denseFrom) {
				t.Fatalf("dense = %v with %d keys", dense, keys)
			}
			if dense {
				want = wantDense
			}
			if g, w := got.Estimate(), want.Estimate(); g != w {
				t.Errorf("estimate %d, want %d", g, w)
			}
			gb, _ := got.MarshalBinary()
			wb, _ := want.MarshalBinary()
			if !bytes.Equal(gb, wb) {
				t.Errorf("binary form differs from the library's")
			}
		})
	}
}

// TestRollupFormIgnoresBatching: an hour's sketch, gathered from the same
// visitors in commits of any size, is stored in the same form with the
// same estimate: sparse below denseFrom keys, dense from it.
func TestRollupFormIgnoresBatching(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{50, denseFrom - 1, denseFrom + 10, 3 * denseFrom} {
		visitors := make([]uint64, n)
		for i := range visitors {
			visitors[i] = rng.Uint64()
		}
		var want []byte
		for _, parts := range []int{1, 2, 7, 40} {
			var stored *record
			for p := range parts {
				part := &record{}
				for i := p; i < n; i += parts {
					// Each visitor twice, as several minutes would bring it.
					part.keys = append(part.keys, visitors[i], visitors[i])
				}
				part.seal()
				if stored == nil {
					stored = part
					continue
				}
				stored.hll.Merge(part.hll)
				stored.dense = stored.dense || part.dense
				stored.settle()
			}
			if stored.dense != (n > denseFrom) {
				t.Errorf("%d visitors in %d commits: dense = %v", n, parts, stored.dense)
			}
			stored.Visitors = int64(stored.hll.Estimate())
			got, err := stored.encode()
			if err != nil {
				t.Fatal(err)
			}
			var r record
			if err := r.decode(got, true); err != nil || r.dense != stored.dense || r.Visitors != stored.Visitors {
				t.Errorf("%d visitors in %d commits: decoded dense %v, %d visitors, err %v; want %v, %d",
					n, parts, r.dense, r.Visitors, err, stored.dense, stored.Visitors)
			}
			if want == nil {
				want = got
			} else if !bytes.Equal(got, want) {
				t.Errorf("%d visitors in %d commits: stored differently than in one", n, parts)
			}
		}
	}
}
