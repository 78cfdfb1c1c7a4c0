package counter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestKeysExact(t *testing.T) {
	k := NewKeys(3)
	for _, key := range []string{"a", "b", "a", "c", "a", "b"} {
		k.Add([]byte(key), 1)
	}
	k.Add([]byte("c"), 5)
	top, other := k.Top(-1)
	want := []KeyCount{{"c", 6}, {"a", 3}, {"b", 2}}
	if !slices.Equal(top, want) || other != 0 {
		t.Errorf("Top = %v, %d; want %v, 0", top, other, want)
	}
	if top, other := k.Top(2); !slices.Equal(top, want[:2]) || other != 2 {
		t.Errorf("Top(2) = %v, %d; want %v, 2", top, other, want[:2])
	}
	if n, ok := k.Count("a"); n != 3 || !ok {
		t.Errorf("Count(a) = %d, %v; want 3, true", n, ok)
	}
	if n, ok := k.Count("z"); n != 0 || ok {
		t.Errorf("Count(z) = %d, %v; want 0, false", n, ok)
	}
	if k.Len() != 3 || k.Total() != 11 || k.Folded() != 0 {
		t.Errorf("Len, Total, Folded = %d, %d, %d; want 3, 11, 0", k.Len(), k.Total(), k.Folded())
	}
}

func TestKeysFold(t *testing.T) {
	k := NewKeys(2)
	k.Add([]byte("a"), 5)
	k.Add([]byte("b"), 2)
	k.Add([]byte("c"), 1) // takes over b's entry, and its 2
	if n, ok := k.Count("b"); ok {
		t.Errorf("b is still held, with %d", n)
	}
	if n, _ := k.Count("c"); n != 1 {
		t.Errorf("Count(c) = %d, want its own 1", n)
	}
	k.Add([]byte("d"), 1) // c's entry counts 3, a's 5: d takes over c's
	top, other := k.Top(-1)
	if want := []KeyCount{{"a", 5}, {"d", 1}}; !slices.Equal(top, want) || other != 3 {
		t.Errorf("Top = %v, %d; want %v, 3", top, other, want)
	}
	if k.Folded() != 2 || k.Len() != 2 {
		t.Errorf("Folded, Len = %d, %d; want 2, 2", k.Folded(), k.Len())
	}
}

// TestKeysHeavy checks Space-Saving's promise on a skewed stream against a
// brute-force count: a key with more than Total/max of the lines is held,
// its count never overstates, and the heavy keys that came early are exact.
func TestKeysHeavy(t *testing.T) {
	const limit = 100
	r := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(r, 1.2, 1, 100_000)
	k := NewKeys(limit)
	truth := map[string]int64{}
	for range 200_000 {
		key := fmt.Sprint(zipf.Uint64())
		truth[key]++
		k.Add([]byte(key), 1)
	}
	if k.Folded() == 0 {
		t.Fatal("the stream never filled the table")
	}
	var sum int64
	for key, n := range truth {
		sum += n
		got, ok := k.Count(key)
		if n > k.Total()/limit && !ok {
			t.Errorf("key %s with %d of %d lines is not held", key, n, k.Total())
		}
		if got > n {
			t.Errorf("key %s: count %d, more than its %d lines", key, got, n)
		}
	}
	if sum != k.Total() {
		t.Errorf("Total = %d, want %d", k.Total(), sum)
	}
	top, other := k.Top(10)
	for _, kc := range top[:5] {
		if kc.Count != truth[kc.Key] {
			t.Errorf("heavy key %s: count %d, want %d", kc.Key, kc.Count, truth[kc.Key])
		}
	}
	var inTop int64
	for _, kc := range top {
		inTop += kc.Count
	}
	if inTop+other != k.Total() {
		t.Errorf("top %d + other %d != total %d", inTop, other, k.Total())
	}
}

func TestKeysAllocs(t *testing.T) {
	k := NewKeys(10)
	keys := [][]byte{[]byte("123"), []byte("456"), []byte("789")}
	for _, key := range keys {
		k.Add(key, 1)
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, key := range keys {
			k.Add(key, 1)
		}
	}); n != 0 {
		t.Errorf("adding to held keys allocates %v times", n)
	}
}

func TestKeysLimit(t *testing.T) {
	k := NewKeys(0)
	k.Add([]byte("a"), 1)
	k.Add([]byte("b"), 1)
	if k.Len() != 1 {
		t.Errorf("NewKeys(0) holds %d keys, want 1", k.Len())
	}
}
