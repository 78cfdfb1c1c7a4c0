package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
)

// TestShardedApplyEqualsSerial: on random input (sites by field and by
// file, more sites than MaxSites, a named counter, bad lines, times out
// of order), a replay whose hits are applied by 1 to 4 shards, with 1 to
// 3 commits under way at once, stores exactly what one that applies them
// on its coordinator and commits one at a time stores: every
// minute (rejected lines in the same minutes), hour and day, their
// visitors, the pages, and the counter's keys. Both commit at the same
// lines, so even the split of a minute across commits is the same.
func TestShardedApplyEqualsSerial(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			chunks := randomChunks(rng)
			for i := range chunks {
				chunks[i].Pattern = rng.IntN(2) // pattern 1's lines are c.example's
			}
			cfg := Config{NoWindow: true, FlushLines: 1 + rng.IntN(500), FlushInterval: time.Hour,
				PatternSites: []string{"", "c.example"}, MaxSites: 1 + int(seed%4)}
			cfg.ApplyShards, cfg.CommitsInFlight = -1, 1
			serial := replaySharded(t, chunks, cfg)
			cfg.ApplyShards, cfg.CommitsInFlight = 1+int(seed%4), 1+int(seed%3)
			sharded := replaySharded(t, chunks, cfg)
			for _, site := range []string{logtally.AllSites, "a.example", "b.example", "c.example", logtally.DefaultSite,
				logtally.OtherSite, logtally.CounterSite("page")} {
				got, want := storedOf(t, sharded, site), storedOf(t, serial, site)
				if got != want {
					t.Fatalf("site %s, %d shards: %s", site, cfg.ApplyShards, firstDiff(got, want))
				}
			}
		})
	}
}

// replaySharded replays chunks into a new store with a counter of the
// pages' numbers, and checks that it committed more than once.
func replaySharded(t *testing.T, chunks []tailer.Chunk, cfg Config) *storage.Store {
	t.Helper()
	cc := counter.DefaultConfig()
	cc.AddCounter("page=GET /p{n}")
	m, err := counter.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	p, s := sitePipeline(t, cfg, func(d *Deps) { d.Counters = m })
	in := make(chan tailer.Chunk, len(chunks))
	for _, c := range chunks {
		in <- c
	}
	close(in)
	if err := p.Replay(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if p.Commits() < 3 {
		t.Fatalf("%d commits", p.Commits())
	}
	return s
}

// storedOf returns what a store holds of a site, as text: its minutes,
// hours and days, its pages and the page counts of its day.
func storedOf(t *testing.T, s *storage.Store, name string) string {
	t.Helper()
	site, ok := s.Site(name)
	if !ok {
		return "none"
	}
	from, to := t0.Add(-24*time.Hour), t0.Add(time.Hour)
	var b strings.Builder
	ms, err := site.Minutes(from, to)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(&b, "minutes", ms)
	for _, step := range []time.Duration{time.Hour, 24 * time.Hour} {
		series, err := site.Series(from, to, step)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, step, series)
	}
	pages, err := site.Pages(from, to, 1000)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(&b, "pages", pages)
	totals, err := site.Totals(from, to)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(&b, "totals", totals)
	return b.String()
}

// firstDiff returns where got first differs from want, with some context.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("at byte %d:\n got ...%s\nwant ...%s", i, got[from:min(len(got), i+100)], want[from:min(len(want), i+100)])
}
