package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// sitePipeline returns a replaying pipeline that counts sites by $host,
// over a real store, and the store.
func sitePipeline(t testing.TB, cfg Config, opts ...func(*Deps)) (*Pipeline, *storage.Store) {
	t.Helper()
	s, err := storage.Open(storage.Config{Path: filepath.Join(t.TempDir(), "db"), TZ: "UTC"}, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	format, err := parser.Config{Format: `$host $remote_addr [$time_local] "$request" $status $body_bytes_sent`, SiteField: "$host"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	rules := classify.DefaultConfig()
	rules.NoUserAgent = true
	classifier, err := classify.New(rules, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ByField, cfg.Anchor = true, AnchorLog
	deps := Deps{Format: format, Classifier: classifier, Store: s, Now: func() time.Time { return t0 },
		NewWindow: func(site string, end time.Time) (*window.Window, error) {
			return window.New(window.DefaultConfig(), end), nil
		}}
	for _, o := range opts {
		o(&deps)
	}
	return mustNew(t, cfg, deps), s
}

// hostLines returns n lines, a thousand a second up to t0, of the hosts
// host(i) gives.
func hostLines(n int, host func(i int) string) []byte {
	var data []byte
	for i := range n {
		data = fmt.Appendf(data, "%s 192.0.2.%d [%s] \"GET /p%d HTTP/1.1\" 200 10\n", host(i), i%50,
			t0.Add(-time.Duration(n-i)*time.Second/1000).Format("02/Jan/2006:15:04:05 -0700"), i%7)
	}
	return data
}

func replayData(t testing.TB, p *Pipeline, data []byte) {
	t.Helper()
	in := make(chan tailer.Chunk, 1)
	in <- tailer.Chunk{File: "f", Data: data, Offset: int64(len(data))}
	close(in)
	if err := p.Replay(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// TestHostFloodStaysWithinMaxSites: 100,000 random Host values make at
// most MaxSites sites and (other), which counts every line of a site first
// seen past the limit; the stored sites are as many, and the all-sites
// view counts every line.
func TestHostFloodStaysWithinMaxSites(t *testing.T) {
	const maxSites, lines = 50, 100_000
	p, s := sitePipeline(t, Config{MaxSites: maxSites})
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var other int64
	data := hostLines(lines, func(i int) string {
		h := fmt.Sprintf("h%x.example", rng.Uint64())
		if !seen[h] && len(seen) < maxSites {
			seen[h] = true
		} else if !seen[h] {
			other++
		}
		return h
	})
	replayData(t, p, data)

	st := p.SiteStats()
	if st.Sites != maxSites+1 || st.OtherLines != other {
		t.Errorf("SiteStats = %+v, want %d sites and (other) with %d lines", st, maxSites+1, other)
	}
	snap, ok := p.SiteSnapshot(logtally.OtherSite)
	if !ok || snap.Requests != other {
		t.Errorf("(other) window: %+v %v, want %d requests", snap, ok, other)
	}
	if got := p.Snapshot().Requests; got != lines {
		t.Errorf("all sites: %d requests, want %d", got, lines)
	}
	if got := len(s.Sites()); got > maxSites+3 { // + (other), (all), default
		t.Errorf("the store holds %d sites, want at most %d", got, maxSites+3)
	}
	for _, name := range []string{logtally.OtherSite, logtally.AllSites} {
		site, ok := s.Site(name)
		if !ok {
			t.Fatalf("site %s not stored", name)
		}
		kept, err := site.Totals(t0.Add(-time.Hour), t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{logtally.OtherSite: other, logtally.AllSites: lines}[name]
		if kept.Requests != want {
			t.Errorf("stored %s: %d requests, want %d", name, kept.Requests, want)
		}
	}
}

// TestSiteVisitors: a client of two sites is one visitor of each and one
// of all sites together, in the windows and in the stored minutes.
func TestSiteVisitors(t *testing.T) {
	p, s := sitePipeline(t, Config{})
	data := hostLines(1000, func(i int) string { return []string{"A.example:80", "b.example.", "-"}[i%3] })
	replayData(t, p, data)
	for site, want := range map[string]int64{"a.example": 50, "b.example": 50, logtally.DefaultSite: 50} {
		snap, ok := p.SiteSnapshot(site)
		if !ok || snap.Visitors != want || snap.Requests != 333+int64(boolInt(site == "a.example")) {
			t.Errorf("site %s: %+v %v, want %d visitors", site, snap, ok, want)
		}
	}
	if got := p.Snapshot().Visitors; got != 50 {
		t.Errorf("all sites: %d visitors, want 50", got)
	}
	all, _ := s.Site(logtally.AllSites)
	a, _ := s.Site("a.example")
	for name, site := range map[string]*storage.Site{"all": all, "a.example": a} {
		got, err := site.Totals(t0.Add(-time.Hour), t0.Add(time.Hour))
		if err != nil || got.Visitors != 50 {
			t.Errorf("stored %s: %+v %v, want 50 visitors", name, got, err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
