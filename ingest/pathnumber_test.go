package ingest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
)

// TestNumberedHitsCount: a chunk's hits added by their paths' numbers
// (NumberPaths, AddTo) count as the same hits added one by one by Add,
// escaped paths and a batch that numbered paths before included.
func TestNumberedHitsCount(t *testing.T) {
	c, _ := newCore(t, Config{})
	const l = `192.0.2.%d - - [21/Nov/2026:12:00:%02d +0000] "GET %s HTTP/1.1" %d 1 "-" "Mozilla/5.0"` + "\n"
	paths := []string{"/a", `/caf\xE9`, "/b", "/a", "/style.css", `/caf\xE9`, "/b", "/c", "/a"}
	var data []byte
	for i, p := range paths {
		data = fmt.Appendf(data, l, i, i, p, 200+100*(i%3))
	}
	cs := append(ingesttest.Chunks(3000, 64<<10), tailer.Chunk{File: "x", Data: data, Offset: int64(len(data))})
	byAdd, byNumber := tally.NewBatch(), tally.NewBatch()
	byNumber.PathNumber([]byte("/b")) // numbered by an earlier chunk
	byAdd.PathNumber([]byte("/b"))
	var sc Scratch
	var r Result
	for _, ch := range cs {
		c.Parse(ch, &sc, &r)
		r.NumberPaths(byNumber)
		for i := range r.Hits {
			byAdd.Add(&r.Hits[i], i%2 == 0)
			r.AddTo(byNumber, i, i%2 == 0)
		}
	}
	if got, want := views(byNumber), views(byAdd); !slices.Equal(got, want) {
		t.Errorf("views by number:\n%v\nwant\n%v", got, want)
	}
}

// TestPathHashCollision: two paths of one hash in a chunk are told apart
// by their bytes; the second is numbered by the batch itself.
func TestPathHashCollision(t *testing.T) {
	var r Result
	var p pathIndex
	p.reset()
	a := logtally.Hit{Time: 60, Path: []byte("/a"), PageView: true, Visitor: 1}
	b := logtally.Hit{Time: 60, Path: []byte("/b"), PageView: true, Visitor: 2}
	r.Hits = []logtally.Hit{a, b, a}
	r.pathOf = append(r.pathOf, p.of(&r, &a))
	// Make /b's slot say that /b is /a, as a colliding hash would.
	mask := uint64(len(p.slots) - 1)
	s := pathHash(b.Path) & mask
	for p.slots[s].i != 0 {
		s = (s + 1) & mask
	}
	p.slots[s] = pathSlot{pathHash(b.Path), 1}
	r.pathOf = append(r.pathOf, p.of(&r, &b), p.of(&r, &a))
	if want := []int32{0, -1, 0}; !slices.Equal(r.pathOf, want) {
		t.Fatalf("path indexes %v, want %v", r.pathOf, want)
	}
	batch := tally.NewBatch()
	r.NumberPaths(batch)
	for i := range r.Hits {
		r.AddTo(batch, i, false)
	}
	if got, want := views(batch), []string{"1: /a /b /a requests 3 pageviews 3 visitors [1 2 1]"}; !slices.Equal(got, want) {
		t.Errorf("views %q, want %q", got, want)
	}
}

// views returns the page views of b's minutes by path name, a line a
// minute.
func views(b *tally.Batch) []string {
	var out []string
	for m, d := range b.Minutes() {
		s := fmt.Sprint(m, ":")
		for _, id := range d.Views {
			s += " " + b.Paths()[id]
		}
		out = append(out, fmt.Sprintf("%s requests %d pageviews %d visitors %v", s, d.Requests, d.PageViews, d.Visitors))
	}
	return out
}

// TestSiteNumbersCount: hits added to their sites' batches by the
// all-sites batch's path numbers (addToSite) count as the same hits added
// by Add, while the all-sites view's batch changes from chunk to chunk
// (two batches of other numberings, as replay hands one to a commit and
// fills the other) and the sites' batches are handed off and reset.
func TestSiteNumbersCount(t *testing.T) {
	c, _ := newCore(t, Config{})
	alls := []*tally.Batch{tally.NewBatch(), tally.NewBatch()}
	alls[1].PathNumber([]byte("/numbered-before")) // so that the two number paths apart
	sites := make([]*Site, 3)
	refs := make([]*tally.Batch, len(sites))
	spares := make([]*tally.Batch, len(sites))
	for k := range sites {
		sites[k] = newSite(fmt.Sprint("s", k), k+1, false)
		refs[k], spares[k] = tally.NewBatch(), tally.NewSiteBatch(sites[k].Name())
	}
	var sc Scratch
	var r Result
	for n, ch := range ingesttest.Chunks(3000, 16<<10) {
		c.Parse(ch, &sc, &r)
		r.NumberPaths(alls[n%2])
		for i := range r.Hits {
			r.AddTo(alls[n%2], i, false)
			r.addToSite(sites[i%len(sites)], i, false)
			refs[i%len(sites)].Add(&r.Hits[i], false)
		}
		if n%3 != 2 {
			continue
		}
		for k, s := range sites {
			if got, want := views(s.Batch), views(refs[k]); !slices.Equal(got, want) {
				t.Fatalf("chunk %d, site %d: views by the all-sites numbers:\n%v\nwant\n%v", n, k, got, want)
			}
			s.Batch, spares[k] = spares[k], s.Batch
			spares[k].Reset()
			refs[k].Reset()
		}
	}
}
