package tally

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/golden"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// shipped is a Delta as a sink sees it: visitors as a set, page views per
// path name.
type shipped struct {
	Requests, PageViews, Bytes, Rejected int64
	Status                               [5]int64
	Visitors                             []uint64
	Views                                map[string]int64
}

func shippedDeltas(b *Batch, seq func(func(int64, *Delta) bool)) map[int64]shipped {
	out := map[int64]shipped{}
	var prev int64
	first := true
	for k, d := range seq {
		if !first && k <= prev {
			panic(fmt.Sprintf("keys out of order: %d after %d", k, prev))
		}
		first, prev = false, k
		v := shipped{Requests: d.Requests, PageViews: d.PageViews, Bytes: d.Bytes, Rejected: d.Rejected,
			Status: d.Status, Views: map[string]int64{}}
		v.Visitors = slices.Compact(slices.Sorted(slices.Values(d.Visitors)))
		for _, id := range d.Views {
			v.Views[b.Paths()[id]]++
		}
		out[k] = v
	}
	return out
}

func equalShipped(a, b map[int64]shipped) bool {
	return maps.EqualFunc(a, b, func(x, y shipped) bool {
		return x.Requests == y.Requests && x.PageViews == y.PageViews && x.Bytes == y.Bytes &&
			x.Rejected == y.Rejected && x.Status == y.Status && slices.Equal(x.Visitors, y.Visitors) &&
			maps.Equal(x.Views, y.Views)
	})
}

// sameShipment reports how got differs from want in what a sink sees.
func sameShipment(t *testing.T, got, want *Batch) {
	t.Helper()
	if g, w := shippedDeltas(got, got.Minutes()), shippedDeltas(want, want.Minutes()); !equalShipped(g, w) {
		t.Errorf("minutes = %+v\nwant %+v", g, w)
	}
	if g, w := shippedDeltas(got, got.Seconds()), shippedDeltas(want, want.Seconds()); !equalShipped(g, w) {
		t.Errorf("seconds = %+v\nwant %+v", g, w)
	}
	if got.Lines() != want.Lines() {
		t.Errorf("lines = %d, want %d", got.Lines(), want.Lines())
	}
}

const codecT0 = 1_795_000_000 // a Sunday afternoon in 2026, unix seconds

// randomBatch fills a batch the way ingest does: lines over a few minutes,
// some live, visitors and paths drawn from small pools so that they repeat,
// statuses out of range, rejected lines.
func randomBatch(rng *rand.Rand, b *Batch, lines int) {
	for range lines {
		if rng.IntN(50) == 0 {
			b.Reject(codecT0)
			b.AddLines(1)
			continue
		}
		h := &logtally.Hit{Time: codecT0 + rng.Int64N(300) - 60, Bytes: rng.Int64N(5000),
			Status: []int{200, 200, 200, 304, 404, 500, 101, 0, 999}[rng.IntN(9)],
			Path:   []byte(fmt.Sprintf("/p/%d", rng.IntN(40)))}
		if rng.IntN(3) > 0 {
			h.PageView = true
			h.Visitor = rng.Uint64N(30) * 0x9e3779b97f4a7c15 // spread over 64 bits
		}
		b.Add(h, h.Time >= codecT0)
		b.AddLines(1)
	}
}

func TestBatchRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i, lines := range []int{0, 1, 2, 10, 1000, 20000} {
		t.Run(fmt.Sprint(lines), func(t *testing.T) {
			b := NewBatch()
			// A numbering from an earlier batch: most of its paths unused now.
			for j := range 100 {
				b.Add(&logtally.Hit{Time: codecT0, Path: []byte(fmt.Sprintf("/old/%d", j)), PageView: true, Status: 200}, true)
			}
			b.Reset()
			randomBatch(rng, b, lines)
			b.SetPosition("file", 123)
			b.SetPosition("another", 7)
			b.SetWindowStart(codecT0 - 600)
			enc, err := b.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var got Batch
			if err := got.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			sameShipment(t, &got, b)
			if !maps.Equal(got.Positions(), b.Positions()) {
				t.Errorf("positions shipped: %v, want %v", got.Positions(), b.Positions())
			}
			if used := len(got.Paths()); used > 40 {
				t.Errorf("%d paths encoded, want only the %s used (at most 40)", used, "paths")
			}
			// The decoded batch encodes to the same bytes: nothing is lost
			// or reordered on the way.
			again, err := got.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(enc) {
				t.Errorf("re-encoding differs: %d bytes, first %d", len(again), len(enc))
			}
			// Encoding does not change the batch (a failed ship is retried).
			if enc2, _ := b.MarshalBinary(); string(enc2) != string(enc) {
				t.Error("second encoding of the same batch differs")
			}
			if i == 5 {
				t.Logf("%d lines: %d bytes", lines, len(enc))
			}
		})
	}
}

// TestBatchDecodeReplaces checks that decoding into a used batch leaves
// nothing of what it held.
func TestBatchDecodeReplaces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	src := NewBatch()
	randomBatch(rng, src, 100)
	enc, err := src.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	dst := NewBatch()
	randomBatch(rng, dst, 500)
	dst.SetPosition("f", 1)
	if err := dst.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	sameShipment(t, dst, src)
	before := shippedDeltas(dst, dst.Minutes())
	if err := dst.UnmarshalBinary(enc[:len(enc)-1]); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("truncated input: %v, want ErrBadBatch", err)
	}
	if !equalShipped(shippedDeltas(dst, dst.Minutes()), before) {
		t.Error("a failed decode changed the batch")
	}
}

func TestBatchSiteRoundTrip(t *testing.T) {
	for _, site := range []string{"blog.example.org", logtally.OtherSite, logtally.AllSites, logtally.DefaultSite} {
		b := NewSiteBatch(site)
		b.Add(&logtally.Hit{Time: codecT0, Path: []byte("/a"), PageView: true, Visitor: 7, Status: 200}, false)
		enc, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Batch
		if err := got.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if got.Site() != site {
			t.Errorf("site %q decoded as %q", site, got.Site())
		}
	}
}

func TestBatchDecodeErrors(t *testing.T) {
	good := NewBatch()
	good.Add(&logtally.Hit{Time: codecT0, Path: []byte("/a"), PageView: true, Visitor: 7, Status: 200}, true)
	enc, err := good.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	badSite := append([]byte{1}, appendString(nil, "Shop Floor")...)
	badSite = append(badSite, enc[1+1+len(logtally.DefaultSite):]...)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"future version", append([]byte{3}, enc[1:]...), "version 3"},
		{"positions out of order", append(slices.Clone(enc[:len(enc)-1]), 2, 1, 'b', 1, 1, 'a', 2), `position of "a" after "b"`},
		{"bad site", badSite, `site "Shop Floor"`},
		{"trailing byte", append(slices.Clone(enc), 0), "after the batch"},
		{"huge count", []byte{1, 7, 'd', 'e', 'f', 'a', 'u', 'l', 't', 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, "larger than the input"},
	}
	for i := range enc[:len(enc)-1] {
		tests = append(tests, struct {
			name string
			data []byte
			want string
		}{fmt.Sprintf("cut at %d", i), enc[:i], ""})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Batch
			err := b.UnmarshalBinary(tt.data)
			if !errors.Is(err, ErrBadBatch) {
				t.Fatalf("err = %v, want ErrBadBatch", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestBatchEncodeRefusesInconsistentDelta(t *testing.T) {
	b := NewBatch()
	b.Add(&logtally.Hit{Time: codecT0, Path: []byte("/a"), PageView: true, Visitor: 7, Status: 200}, false)
	for _, d := range b.Minutes() {
		d.PageViews++ // no path for this page view
	}
	if _, err := b.MarshalBinary(); err == nil {
		t.Error("encoded a delta whose page views and paths disagree")
	}
}

// goldenBatch is a small batch with every kind of content.
func goldenBatch() *Batch {
	b := NewBatch()
	b.Add(&logtally.Hit{Time: codecT0 - 61, Path: []byte("/old"), PageView: true, Visitor: 1, Status: 200, Bytes: 10}, false)
	b.Add(&logtally.Hit{Time: codecT0, Path: []byte("/a"), PageView: true, Visitor: 1 << 63, Status: 200, Bytes: 500}, true)
	b.Add(&logtally.Hit{Time: codecT0, Path: []byte("/a"), PageView: true, Visitor: 2, Status: 200, Bytes: 500}, true)
	b.Add(&logtally.Hit{Time: codecT0 + 1, Path: []byte("/b/c"), PageView: true, Visitor: 2, Status: 304}, true)
	b.Add(&logtally.Hit{Time: codecT0 + 1, Path: []byte("/x.css"), Status: 404, Bytes: 20}, true)
	b.Reject(0)
	b.AddLines(6)
	return b
}

// goldenPositions are the read positions of the golden batch, as encoded
// from version 2 on.
func goldenPositions(b *Batch) *Batch {
	b.SetPosition("fp:0123456789abcdef01234567", 4096)
	b.SetPosition("fp:89abcdef0123456789abcdef", 1<<40)
	return b
}

// TestBatchEncodingGolden pins the layout: a change to it must come with a
// new encoding version, since encoded batches wait in outboxes across
// upgrades.
func TestBatchEncodingGolden(t *testing.T) {
	enc, err := goldenPositions(goldenBatch()).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "batch.golden"), []byte(hex.Dump(enc)), *updateGolden)
}

// TestBatchEncodingVersion1 decodes a batch encoded by the version before
// read positions were shipped, as an outbox may hold after an upgrade.
func TestBatchEncodingVersion1(t *testing.T) {
	v1, err := os.ReadFile(filepath.Join("testdata", "batch-v1.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var got Batch
	if err := got.UnmarshalBinary(v1); err != nil {
		t.Fatal(err)
	}
	sameShipment(t, &got, goldenBatch())
	if len(got.Positions()) != 0 {
		t.Errorf("positions of a version 1 batch: %v", got.Positions())
	}
}

// FuzzUnmarshalBatch feeds the decoder arbitrary bytes, seeded with real
// encodings: it must answer with an error or a batch, never panic, and a
// batch it accepts must survive another round trip unchanged.
func FuzzUnmarshalBatch(f *testing.F) {
	if b, err := goldenBatch().MarshalBinary(); err == nil {
		f.Add(b)
	}
	if v1, err := os.ReadFile(filepath.Join("testdata", "batch-v1.bin")); err == nil {
		f.Add(v1)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 3, 50} {
		b := NewBatch()
		randomBatch(rng, b, n)
		if enc, err := b.MarshalBinary(); err == nil {
			f.Add(enc)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b Batch
		if err := b.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrBadBatch) {
				t.Fatalf("error %v does not wrap ErrBadBatch", err)
			}
			return
		}
		enc, err := b.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded batch does not encode: %v", err)
		}
		var back Batch
		if err := back.UnmarshalBinary(enc); err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		sameShipment(t, &back, &b)
	})
}
