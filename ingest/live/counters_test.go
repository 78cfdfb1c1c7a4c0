package live

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/window"
)

// TestCountersMatchBruteForce: shows and clicks of many items, counted
// with two counters declared, give each counter's window and stored daily
// and all-time count per key, and its distinct visitors, as a count of
// the lines themselves; lines of neither stay out of both.
func TestCountersMatchBruteForce(t *testing.T) {
	s := ingesttest.Store(t)
	cfg := counter.DefaultConfig()
	cfg.AddCounter("show=GET /thumb/{id}.jpg")
	cfg.AddCounter("click=GET /watch/{id} status=2xx")
	m, err := counter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	format, classifier := ingesttest.Combined(t)
	core := ingest.Deps{Format: format, Classifier: classifier, Counters: m, Now: func() time.Time { return t0 }}
	p := mustNew(t, Config{Anchor: AnchorLog}, Deps{Deps: core, Store: s,
		Window: window.New(window.DefaultConfig(), time.Unix(0, 0)),
		NewWindow: func(site string, end time.Time) (*window.Window, error) {
			return window.New(window.Config{MaxPaths: 100_000, Pages: 100_000}, end), nil
		}})

	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string]map[string]int64{"show": {}, "click": {}}
	visitors := map[string]map[string]bool{"show": {}, "click": {}}
	var data []byte
	const lines = 20_000
	for i := range lines {
		ip := fmt.Sprintf("192.0.2.%d", rng.IntN(250))
		item := rng.IntN(1000)
		status := 200
		var path, name string
		switch rng.IntN(5) {
		case 0, 1, 2:
			path, name = fmt.Sprintf("/thumb/%d.jpg", item), "show" // an asset: no page view
		case 3:
			path, name = fmt.Sprintf("/watch/%d", item), "click"
			if rng.IntN(10) == 0 {
				status, name = 404, "" // click counts 2xx only
			}
		default:
			path = fmt.Sprintf("/about/%d", item)
		}
		if name != "" {
			want[name][fmt.Sprint(item)]++
			visitors[name][ip] = true
		}
		data = fmt.Appendf(data, "%s - - [%s] \"GET %s HTTP/1.1\" %d 10 \"-\" \"Firefox\"\n", ip,
			t0.Add(-time.Duration(lines-i)*time.Second/100).Format("02/Jan/2006:15:04:05 -0700"), path, status)
	}
	runData(t, p, data)

	for name, keys := range want {
		snap, ok := p.CounterSnapshot(name)
		if !ok {
			t.Fatalf("no counter %s", name)
		}
		var total int64
		got := map[string]int64{}
		for _, pc := range snap.Pages {
			got[pc.Path] = pc.PageViews
			total += pc.PageViews
		}
		if fmt.Sprint(got) != fmt.Sprint(keys) || snap.Requests != total {
			t.Errorf("counter %s window: %d keys, %d lines; want %d keys", name, len(got), snap.Requests, len(keys))
		}
		if snap.Visitors != int64(len(visitors[name])) {
			t.Errorf("counter %s: %d visitors, want %d", name, snap.Visitors, len(visitors[name]))
		}
		site, ok := s.Site(logtally.CounterSite(name))
		if !ok {
			t.Fatalf("counter %s not stored", name)
		}
		ids := slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		})[:50]
		counts, err := site.PathCounts(ids, t0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			if c.Day != keys[c.Path] || c.Total != keys[c.Path] {
				t.Errorf("counter %s key %s stored: day %d, total %d; want %d", name, c.Path, c.Day, c.Total, keys[c.Path])
			}
		}
	}
	if got := p.Snapshot().Requests; got != lines {
		t.Errorf("site: %d requests, want %d", got, lines)
	}
	if got := s.Kept().Minutes; got != lines {
		t.Errorf("Kept: %d lines, want %d (a counter's lines are not lines of their own)", got, lines)
	}
}
