package live

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// siteLoop returns a live loop that counts sites by $host, with its
// window at the newest line, over a real store, and the store.
func siteLoop(t testing.TB, cfg Config, opts ...func(*Deps)) (*Loop, *storage.Store) {
	t.Helper()
	s := ingesttest.Store(t)
	format, classifier := ingesttest.SiteFormat(t)
	cfg.Ingest.ByField, cfg.Anchor = true, AnchorLog
	deps := Deps{Deps: ingest.Deps{Format: format, Classifier: classifier, Now: func() time.Time { return t0 }}, Store: s,
		NewWindow: func(site string, end time.Time) (*window.Window, error) {
			return window.New(window.DefaultConfig(), end), nil
		}}
	for _, o := range opts {
		o(&deps)
	}
	return mustNew(t, cfg, deps), s
}

// runData runs l over data, one chunk of file "f".
func runData(t testing.TB, l *Loop, data []byte) {
	t.Helper()
	run(t, l, tailer.Chunk{File: "f", Data: data, Offset: int64(len(data))})
}

// TestHostFloodStaysWithinMaxSites: 100,000 random Host values make at
// most MaxSites sites and (other), which counts every line of a site first
// seen past the limit; the stored sites are as many, and the all-sites
// view counts every line.
func TestHostFloodStaysWithinMaxSites(t *testing.T) {
	const maxSites, lines = 50, 100_000
	p, s := siteLoop(t, Config{Ingest: ingest.Config{MaxSites: maxSites}})
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var other int64
	data := ingesttest.HostLines(lines, func(i int) string {
		h := fmt.Sprintf("h%x.example", rng.Uint64())
		if !seen[h] && len(seen) < maxSites {
			seen[h] = true
		} else if !seen[h] {
			other++
		}
		return h
	})
	runData(t, p, data)

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
	p, s := siteLoop(t, Config{})
	data := ingesttest.HostLines(1000, func(i int) string { return []string{"A.example:80", "b.example.", "-"}[i%3] })
	runData(t, p, data)
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
