package ingest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
)

// newCore returns a core of one site over the combined format, on the wall
// clock (after the lines were written), and a store to commit it to (see
// commit).
func newCore(tb testing.TB, cfg Config) (*Core, *storage.Store) {
	tb.Helper()
	format, classifier := ingesttest.Combined(tb)
	c, err := New(cfg, Deps{Format: format, Classifier: classifier})
	if err != nil {
		tb.Fatal(err)
	}
	return c, ingesttest.Store(tb)
}

// feed parses, routes and applies ch, as a loop does.
func feed(c *Core, ch tailer.Chunk, r *Result) {
	var sc Scratch
	c.Parse(ch, &sc, r)
	c.Route(r)
	c.Apply(r)
}

// commit commits what c's batches hold to store, and empties them.
func commit(tb testing.TB, c *Core, store *storage.Store) {
	tb.Helper()
	var bs []*tally.Batch
	pending := c.Pending()
	for _, s := range pending {
		bs = append(bs, s.Batch)
	}
	if err := store.Commit(bs...); err != nil {
		tb.Fatal(err)
	}
	for _, s := range pending {
		s.Batch.Reset()
	}
	c.ClearPending()
}

func TestLongLineRejected(t *testing.T) {
	c, _ := newCore(t, Config{MaxLine: 100})
	data := append(bytes.Repeat([]byte("x"), 200), '\n')
	feed(c, tailer.Chunk{File: "a", Data: data, Offset: 201, Skipped: 2}, new(Result))
	if got := c.RejectedBy()[tailer.ErrLongLine.Error()]; got != 3 || c.Lines() != 3 {
		t.Errorf("rejected as too long = %d of %d lines, want 3 of 3", got, c.Lines())
	}
}

// TestRoute: each hit goes to its file's site, or to the site its line
// names (the default for none); a site first seen past MaxSites (a known
// site, a file's and two by field) to (other); a mapped file is the site
// of its rejected lines; and the pending batches are those of the sites
// that got lines, in that order, the all-sites view's last.
func TestRoute(t *testing.T) {
	format, classifier := ingesttest.SiteFormat(t)
	c, err := New(Config{ByField: true, PatternSites: []string{"", "c.example"}, MaxSites: 3},
		Deps{Format: format, Classifier: classifier, KnownSites: []string{"a.example"},
			Now: func() time.Time { return ingesttest.T0 }})
	if err != nil {
		t.Fatal(err)
	}
	names := func(r *Result) []string {
		var out []string
		for i := range r.Hits {
			name := "-"
			if s := r.Site(i); s != nil {
				name = s.Name()
			}
			out = append(out, name)
		}
		return out
	}
	var r Result
	data := append(ingesttest.HostLines(2, func(int) string { return "a.example" }), "not a line\n"...)
	feed(c, tailer.Chunk{File: "g", Data: data, Offset: int64(len(data)), Pattern: 1}, &r)
	if got := names(&r); !slices.Equal(got, []string{"c.example", "c.example"}) || r.FileSite() == nil ||
		r.FileSite().Name() != "c.example" {
		t.Errorf("sites of a mapped file: %q, file site %v; want c.example", got, r.FileSite())
	}
	data = ingesttest.HostLines(5, func(i int) string { return []string{"a.example", "B.example", "x.example", "-", "y.example"}[i] })
	feed(c, tailer.Chunk{File: "f", Data: data, Offset: int64(len(data))}, &r)
	want := []string{"a.example", "b.example", logtally.OtherSite, logtally.OtherSite, logtally.OtherSite}
	if got := names(&r); !slices.Equal(got, want) || r.FileSite() != nil {
		t.Errorf("sites by field: %q, file site %v; want %q and none", got, r.FileSite(), want)
	}
	var pending []string
	for _, s := range c.Pending() {
		pending = append(pending, s.Name())
	}
	want = []string{"c.example", "a.example", "b.example", logtally.OtherSite, logtally.AllSites}
	if !slices.Equal(pending, want) {
		t.Errorf("pending sites %q, want %q", pending, want)
	}
	if st := c.SiteStats(); st.Sites != 4 || st.OtherLines != 3 {
		t.Errorf("SiteStats = %+v, want 4 sites, 3 lines under (other)", st)
	}
}

// BenchmarkParse is the per-core part of a replay: lines to hits.
func BenchmarkParse(b *testing.B) {
	c, _ := newCore(b, Config{})
	cs := ingesttest.Chunks(50_000, tailer.ChunkSize)
	var size int64
	for _, ch := range cs {
		size += int64(len(ch.Data))
	}
	var sc Scratch
	var r Result
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, ch := range cs {
			c.Parse(ch, &sc, &r)
		}
	}
	b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkApply is the serial part of a replay: hits routed and added to
// the batches (the live loop's windows are in package live's). The
// commits are left out: see BenchmarkCommit.
func BenchmarkApply(b *testing.B) {
	b.Run("replay", func(b *testing.B) {
		c, store := newCore(b, Config{})
		rs := parsed(c)
		b.ReportAllocs()
		for range b.N {
			for i := range rs {
				c.Route(&rs[i])
				c.Apply(&rs[i])
			}
			b.StopTimer()
			commit(b, c, store)
			b.StartTimer()
		}
		b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
}

// BenchmarkCommit is a replay's other serial step: committing the batches
// of 50,000 lines (one site), which replay does on a goroutine of its own.
func BenchmarkCommit(b *testing.B) {
	c, store := newCore(b, Config{})
	rs := parsed(c)
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		for i := range rs {
			c.Route(&rs[i])
			c.Apply(&rs[i])
		}
		b.StartTimer()
		commit(b, c, store)
	}
	b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// parsed returns 50,000 lines in chunks, parsed.
func parsed(c *Core) []Result {
	cs := ingesttest.Chunks(50_000, tailer.ChunkSize)
	rs := make([]Result, len(cs))
	var sc Scratch
	for i, ch := range cs {
		c.Parse(ch, &sc, &rs[i])
	}
	return rs
}

// TestEscapedPathsKept: a path the parser decoded or escaped lies in its
// Record, which the next line reuses: each hit keeps its own.
func TestEscapedPathsKept(t *testing.T) {
	c, _ := newCore(t, Config{})
	const l = `192.0.2.1 - - [21/Nov/2026:12:00:00 +0000] "GET %s HTTP/1.1" 200 1 "-" "Mozilla/5.0"` + "\n"
	paths := []string{`/caf\xE9`, `/a\x00b`, `/q\x22`, "/plain", `/x\x5CxE9`}
	want := []string{`/caf\xE9`, `/a\x00b`, `/q"`, "/plain", `/x\x5CxE9`}
	var data []byte
	for _, p := range paths {
		data = fmt.Appendf(data, l, p)
	}
	var sc Scratch
	var r Result
	c.Parse(tailer.Chunk{File: "a", Data: data, Offset: int64(len(data))}, &sc, &r)
	var got []string
	for _, h := range r.Hits {
		got = append(got, string(h.Path))
	}
	if !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
}
