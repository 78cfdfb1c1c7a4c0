package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/axiomhq/hyperloglog"
	bolt "go.etcd.io/bbolt"
)

// TestSparseKeyMatchesInsert: a rollup's sketch, and a minute's
// (minuteSketch), built from their keys, are the one the library builds
// inserting the hashes one by one, sparse below denseFrom keys and dense
// from them, with the same estimate.
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
			r := &record{}
			for _, h := range hashes {
				r.keys = append(r.keys, sparseKey(h))
			}
			r.seal()
			if err := r.sketchKeys(); err != nil {
				t.Fatal(err)
			}
			got, dense := r.hll, r.dense
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
			if !dense { // a minute's sketch
				var buf sketchBuf
				mb, _ := minuteSketch(hashes, &buf).MarshalBinary()
				if !bytes.Equal(mb, wb) {
					t.Errorf("minuteSketch: binary form differs from the library's")
				}
			}
		})
	}
}

// TestRollupFormIgnoresBatching: an hour's sketch, merged into the stored
// hour from the same visitors in commits of any size, is stored alike,
// with the same estimate: sparse below denseFrom keys, dense from them.
func TestRollupFormIgnoresBatching(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, n := range []int{50, denseFrom - 1, denseFrom + 10, 3 * denseFrom} {
		visitors := make([]uint64, n)
		for i := range visitors {
			visitors[i] = rng.Uint64()
		}
		var want []byte
		for _, parts := range []int{1, 2, 7, 40} {
			key := []byte(fmt.Sprint(n, parts))
			err := db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("hours"))
				if err != nil {
					return err
				}
				for p := range parts {
					part := rollups{hours: map[int64]*record{0: {}}}
					for i := p; i < n; i += parts {
						// Each visitor twice, as two minutes would bring it.
						k := sparseKey(visitors[i])
						part.hours[0].keys = append(part.hours[0].keys, k, k)
					}
					part.seal()
					if err := mergeRollup(b, key, part.hours[0]); err != nil {
						return err
					}
				}
				want = checkRollup(t, b.Get(key), n, parts, want)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkRollup checks a stored rollup of n visitors merged from parts
// commits against want, the first one stored, and returns want.
func checkRollup(t *testing.T, got []byte, n, parts int, want []byte) []byte {
	t.Helper()
	var r record
	if err := r.decodeRollup(got); err != nil {
		t.Fatal(err)
	}
	if r.dense != (n > denseFrom) {
		t.Errorf("%d visitors in %d commits: dense = %v", n, parts, r.dense)
	}
	if diff := float64(r.Visitors)/float64(n) - 1; diff > 0.02 || diff < -0.02 {
		t.Errorf("%d visitors in %d commits: estimated %d", n, parts, r.Visitors)
	}
	if want != nil && !bytes.Equal(got, want) {
		t.Errorf("%d visitors in %d commits: stored differently than in one", n, parts)
	}
	if want == nil {
		return got
	}
	return want
}

// TestEncodeRollupIsTheSketch: an hour or a day encoded from its sparse
// keys (encodeRollup) is byte for byte what the sketch made of them,
// estimated and marshalled, is, with the same visitors; where hyperloglog
// would refuse a key, it is refused all the same.
func TestEncodeRollupIsTheSketch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 5, 64, 700, denseFrom - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			hashes := make([]uint64, n)
			for i := range hashes {
				hashes[i] = rng.Uint64()
				if i%3 == 0 {
					hashes[i] &^= 0x7ff << 39 // a flagged key, with its rank
				}
			}
			keys := sortedKeys(hashes)
			got := record{sparse: keys}
			got.Requests = int64(n)
			gotV, err := got.encodeRollup()
			if err != nil {
				t.Fatal(err)
			}
			want := record{Counts: got.Counts}
			sk, err := sparseSketch(keys)
			if err != nil {
				t.Fatal(err)
			}
			want.hll, want.Visitors, want.Approximate = sk, int64(sk.Estimate()), true
			wantV, err := want.encode()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotV, wantV) {
				t.Errorf("encoded %x, want %x", gotV, wantV)
			}
			if got.Visitors != want.Visitors {
				t.Errorf("visitors %d, want %d", got.Visitors, want.Visitors)
			}
		})
	}
	for rank := uint32(0); rank < 64; rank++ {
		k := uint32(12345)<<7 | rank<<1 | 1
		_, libErr := sparseSketch([]uint32{k})
		if got, want := validSparseKey(k), libErr == nil; got != want {
			t.Errorf("key %#x (rank field %d): valid %v, hyperloglog reads it: %v", k, rank, got, want)
		}
	}
}

// TestEncodeRollupIsTheLibrarysInEveryCase: encodeRollup gives what the
// library path it replaced gave (the keys made a sketch, estimated and
// marshalled), bytes, visitors and error, for the rollups that
// TestEncodeRollupIsTheSketch leaves out: one with no visitors (whose
// count is left as stored), one past denseFrom, one read back from a
// sketch an older program stored with keys in its tmp set, and one with a
// key hyperloglog refuses.
func TestEncodeRollupIsTheLibrarysInEveryCase(t *testing.T) {
	// Each case makes its rollup twice, alike: the hashes of n are fixed.
	hashes := func(n int) []uint64 {
		rng := rand.New(rand.NewPCG(5, uint64(n)))
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = rng.Uint64()
			if i%3 == 0 {
				hs[i] &^= 0x7ff << 39 // a flagged key, with its rank
			}
		}
		return hs
	}
	stored := func(hs []uint64) record { // an older program's: keys in the tmp set
		sk := hyperloglog.New14()
		for _, h := range hs {
			sk.InsertHash(h)
		}
		old := record{hll: sk}
		old.Requests, old.Visitors, old.Approximate = int64(len(hs)), 1, true
		v, err := old.encode()
		if err != nil {
			t.Fatal(err)
		}
		var r record
		if err := r.decodeRollup(v); err != nil {
			t.Fatal(err)
		}
		return r
	}
	valid := sparseKey(hashes(1)[0])
	refused := uint32(777)<<7 | 50<<1 | 1 // a rank of 50+11, past 64-14+1
	for _, tc := range []struct {
		name string
		make func() record
	}{
		{"none", func() record { var r record; r.Requests, r.Visitors = 3, 2; return r }},
		{"dense", func() record { var r record; r.addKeys(sortedKeys(hashes(denseFrom + 5))); return r }},
		{"older encoding", func() record { return stored(hashes(100)) }},
		{"older encoding, merged", func() record {
			r := stored(hashes(40))
			r.addKeys(sortedKeys(hashes(60)))
			return r
		}},
		{"refused key", func() record { return record{sparse: []uint32{min(valid, refused), max(valid, refused)}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.make()
			gotV, gotErr := got.encodeRollup()
			want := tc.make()
			wantErr := want.sketchKeys()
			var wantV []byte
			if wantErr == nil {
				if want.hll != nil {
					want.Visitors = int64(want.hll.Estimate())
				}
				want.Approximate = true
				wantV, wantErr = want.encode()
			}
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if !bytes.Equal(gotV, wantV) {
				t.Errorf("encoded %x, want %x", gotV, wantV)
			}
			if gotErr == nil && got.Visitors != want.Visitors {
				t.Errorf("visitors %d, want %d", got.Visitors, want.Visitors)
			}
		})
	}
}

// sortedKeys returns the sparse keys of hashes, sorted and distinct.
func sortedKeys(hashes []uint64) []uint32 {
	keys := make([]uint32, len(hashes))
	for i, h := range hashes {
		keys[i] = sparseKey(h)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
