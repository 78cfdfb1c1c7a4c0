package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// sketchVisitors returns n sorted distinct visitor hashes; with zeros,
// every tenth has the bits after the top 14 zero, which makes sparse keys
// with a count of zeros (of uniform hashes, one in 2,048).
func sketchVisitors(rng *rand.Rand, n int, zeros bool) []uint64 {
	seen := map[uint64]bool{}
	var vs []uint64
	for len(vs) < n {
		v := rng.Uint64()
		if zeros && len(vs)%10 == 0 {
			v &^= (1<<11 - 1) << (64 - 25)
		}
		if !seen[v] {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}

// TestSparseSketchIsInsertHash: a sketch made by minuteSketch holds what
// one made by InsertHash holds: once both are compacted (Estimate), their
// encodings are the same bytes.
func TestSparseSketchIsInsertHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf sketchBuf
	for _, n := range []int{1, 2, 163, 164, 165, 500, 1000, denseFrom - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			vs := sketchVisitors(rng, n, true)
			got, want := minuteSketch(vs, &buf), insertSketch(vs)
			if g, w := got.Estimate(), want.Estimate(); g != w {
				t.Errorf("estimate %d, want %d", g, w)
			}
			g, err := got.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			w, err := want.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(g, w) {
				t.Errorf("encoding of %d bytes differs from InsertHash's %d bytes", len(g), len(w))
			}
		})
	}
}

// BenchmarkSketch makes the sparse sketch of a busy minute's 1,000
// visitors, by minuteSketch and by InsertHash.
func BenchmarkSketch(b *testing.B) {
	vs := sketchVisitors(rand.New(rand.NewPCG(1, 2)), 1000, false)
	b.Run("sparse", func(b *testing.B) {
		var buf sketchBuf
		b.ReportAllocs()
		for b.Loop() {
			minuteSketch(vs, &buf)
		}
	})
	b.Run("insert", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			insertSketch(vs)
		}
	})
}

// TestSparseSketchBytes: the binary form minuteSketchData gives, which a
// minute stored new keeps, is what MarshalBinary gives of minuteSketch's
// sketch, which a minute merged into a stored one keeps.
func TestSparseSketchBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var buf, other sketchBuf
	for _, n := range []int{1, 2, 6, 163, 164, 165, 1000, denseFrom - 1} {
		vs := sketchVisitors(rng, n, true)
		got, ok := minuteSketchData(vs, &buf)
		if !ok {
			t.Fatalf("%d visitors: no sparse form", n)
		}
		want, err := minuteSketch(vs, &other).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d visitors: %d bytes, want the %d of MarshalBinary", n, len(got), len(want))
		}
	}
}
