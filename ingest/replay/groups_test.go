package replay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/ingest/live"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// overlapping are counters declared apart that count many lines under the
// same key, so that those lines are counted once for several of them (a
// group), while each also has lines of its own or shares them with
// another set: a, b and g count every GET page of /pN under N (g as b
// does, so under b's batch); c the 2xx of them, f the 404s, d those whose
// N is digits only (not /p5.css); e keys the same lines by the whole
// segment, another key.
var overlapping = []string{
	"a=GET /p{n}",
	"b=* /p{n}",
	"c=GET /p{n} status=2xx",
	"d=GET /p{n:[0-9]+}",
	"e=GET /{x}",
	"f=GET /p{n} status=404",
	"g=* /p{n}",
}

// TestGroupedCountersEqualApart: on random input, counters counted
// together, where lines counted alike by several are counted once for
// them, store for each exactly what it stores counted alone, by replay
// (commits of random sizes) and by the live loop (a commit a chunk), in
// minutes and in each day's keys.
func TestGroupedCountersEqualApart(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			chunks := ingesttest.RandomChunks(rng, ingest.JudgeLines)
			cfg := ingest.Config{ByField: true, FlushLines: 1 + rng.IntN(500)}
			replayed, _ := countInto(t, chunks, cfg, matcher(t, overlapping...), false)
			run, loop := countInto(t, chunks, cfg, matcher(t, overlapping...), true)
			together := map[string]*storage.Store{"replay": replayed, "live": run}
			for _, decl := range overlapping {
				name := decl[:1]
				alone, aloneLoop := countInto(t, chunks, cfg, matcher(t, decl), true)
				want := counted(t, alone, name)
				if want == "" {
					t.Fatalf("counter %s counted nothing alone", name)
				}
				for how, s := range together {
					if got := counted(t, s, name); got != want {
						t.Errorf("counter %s counted with the others (%s):\n%s\nalone:\n%s", name, how, got, want)
					}
				}
				got, _ := loop.CounterSnapshot(name)
				want2, _ := aloneLoop.CounterSnapshot(name)
				if !reflect.DeepEqual(got, want2) {
					t.Errorf("counter %s's window counted with the others:\n%+v\nalone:\n%+v", name, got, want2)
				}
			}
		})
	}
}

// matcher returns a matcher of the declared counters.
func matcher(t *testing.T, decls ...string) *counter.Matcher {
	t.Helper()
	cc := counter.DefaultConfig()
	for _, d := range decls {
		cc.AddCounter(d)
	}
	m, err := counter.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// countInto counts chunks into a new store with the counters of m, by
// replay, or by the live loop committing every chunk (then returned too).
func countInto(t *testing.T, chunks []tailer.Chunk, cfg ingest.Config, m *counter.Matcher, run bool) (*storage.Store, *live.Loop) {
	t.Helper()
	s := ingesttest.Store(t)
	format, classifier := ingesttest.SiteFormat(t)
	core := ingest.Deps{Format: format, Classifier: classifier, Counters: m, Now: func() time.Time { return t0 }}
	if !run {
		r, err := New(Config{Ingest: cfg}, Deps{Deps: core, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Replay(context.Background(), ingesttest.Feed(chunks...)); err != nil {
			t.Fatal(err)
		}
		return s, nil
	}
	cfg.FlushLines = 1
	l, err := live.New(live.Config{Ingest: cfg, Anchor: live.AnchorLog}, live.Deps{Deps: core, Store: s,
		NewWindow: func(site string, end time.Time) (*window.Window, error) {
			return window.New(window.Config{MaxPaths: 1000, Pages: 1000, PathVisitors: true}, end), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Run(context.Background(), ingesttest.Feed(chunks...)); err != nil {
		t.Fatal(err)
	}
	return s, l
}

// counted returns what a store holds of counter name, as the API reads
// it (its history, or the one it shares): its minutes, and its keys with
// their views over the day before T0, as text ("" if none).
func counted(t *testing.T, s *storage.Store, name string) string {
	t.Helper()
	site := s.Shares(logtally.CounterSite(name)) // its history, or the one it shares
	minutes, _ := ingesttest.MinutesOf(t, s, site)
	st, ok := s.Site(site)
	if !ok || minutes == "[]" {
		return ""
	}
	pages, err := st.Pages(ingesttest.T0.Add(-24*time.Hour), ingesttest.T0.Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(pages.Pages))
	for _, p := range pages.Pages {
		keys = append(keys, fmt.Sprintf("%s=%d", p.Path, p.PageViews))
	}
	slices.Sort(keys)
	return fmt.Sprintf("minutes %s\nkeys %v", minutes, keys)
}
