package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// fillBatch adds n hits of a busy site, starting at start and 10,000,000
// lines a day apart: 100,000 paths, 200,000 visitors, two thirds page views.
func fillBatch(b *tally.Batch, rng *rand.Rand, paths [][]byte, start time.Time, n int, live bool) time.Time {
	step := 24 * time.Hour / 10_000_000
	for i := range n {
		t := start.Add(time.Duration(i) * step)
		h := logtally.Hit{Time: t.Unix(), Path: paths[int(float64(len(paths))*rng.Float64()*rng.Float64())]}
		if rng.IntN(3) > 0 {
			h.PageView, h.Visitor = true, rng.Uint64N(200_000)*0x9e3779b97f4a7c15
		}
		addHit(b, h, 200, 5000, live)
	}
	return start.Add(time.Duration(n) * step)
}

// openBench opens a store in a temporary directory of b's, closed when b
// ends.
func openBench(b *testing.B) *Store {
	b.Helper()
	s, err := Open(Config{Path: filepath.Join(b.TempDir(), "db"), TZ: "UTC"}, fixedNow)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func makePaths(n int) [][]byte {
	paths := make([][]byte, n)
	for i := range paths {
		paths[i] = fmt.Appendf(nil, "/articles/%d/some-title-of-item-%d", i, i)
	}
	return paths
}

// BenchmarkCommit50k measures committing one flush worth of lines (50,000)
// into a database that already holds the previous hours. ms/commit is the
// commit alone. Compaction of the path log runs as RunPruner would run it,
// whenever a commit asks for it, outside the timer: ms/commit+compact adds
// its time, spread over the commits.
func BenchmarkCommit50k(b *testing.B) {
	s := openBench(b)
	var compactions int
	var compacting time.Duration
	compact := func() {
		select {
		case <-s.wake:
		default:
			return
		}
		began := time.Now()
		if err := s.compact(context.Background()); err != nil {
			b.Fatal(err)
		}
		compacting += time.Since(began)
		compactions++
	}
	rng := rand.New(rand.NewPCG(1, 2))
	paths := makePaths(100_000)
	at := t0
	batch := tally.NewBatch()
	for range 20 { // history to commit on top of
		at = fillBatch(batch, rng, paths, at, 50_000, false)
		if err := s.Commit(batch); err != nil {
			b.Fatal(err)
		}
		compact()
		batch.Reset()
	}
	compactions, compacting = 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		batch.Reset()
		at = fillBatch(batch, rng, paths, at, 50_000, true)
		batch.SetWindowStart(at.Add(-10 * time.Minute).Unix())
		b.StartTimer()
		if err := s.Commit(batch); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		compact()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/commit")
	b.ReportMetric(float64((b.Elapsed()+compacting).Microseconds())/1e3/float64(b.N), "ms/commit+compact")
	b.ReportMetric(float64(compactions)/float64(b.N), "compactions/commit")
}

// benchDay is a store holding one day of minutes of a busy site, filled
// once per benchmark binary: 2,000,000 lines, 100,000 paths, 200,000
// visitors, a third of a million page views an hour.
var benchDay struct {
	once sync.Once
	s    *Store
	err  error
}

func openBenchDay(b *testing.B) *Store {
	b.Helper()
	benchDay.once.Do(func() {
		dir, err := os.MkdirTemp("", "logtally-series-bench")
		if err != nil {
			benchDay.err = err
			return
		}
		s, err := Open(Config{Path: filepath.Join(dir, "db"), TZ: "UTC"}, fixedNow)
		if err != nil {
			benchDay.err = err
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		paths := makePaths(100_000)
		batch := tally.NewBatch()
		const lines, per = 2_000_000, 50_000
		step := 24 * time.Hour / lines
		for i := 0; i < lines; i += per {
			batch.Reset()
			for j := range per {
				h := logtally.Hit{Time: t0.Add(time.Duration(i+j) * step).Unix(),
					Path: paths[int(float64(len(paths))*rng.Float64()*rng.Float64())]}
				if rng.IntN(3) > 0 {
					h.PageView, h.Visitor = true, rng.Uint64N(200_000)*0x9e3779b97f4a7c15
				}
				addHit(batch, h, 200, 5000, false)
			}
			if err := s.Commit(batch); err != nil {
				benchDay.err = err
				return
			}
		}
		benchDay.s = s
	})
	if benchDay.err != nil {
		b.Fatal(benchDay.err)
	}
	return benchDay.s
}

// BenchmarkSeriesDay measures one day's series, as GET /api/v1/series asks
// for it, from the minutes of a busy day.
func BenchmarkSeriesDay(b *testing.B) {
	s := openBenchDay(b)
	for _, step := range []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour} {
		b.Run(step.String(), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				res, err := s.Series(t0, t0.Add(24*time.Hour-time.Second), step)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Points) == 0 || res.Points[0].Visitors == 0 {
					b.Fatal("no visitors")
				}
			}
		})
	}
}

// BenchmarkCommitStages splits a replay's commit of 50,000 lines (600 a
// minute, 5,000 visitors, 200 paths, two thirds page views, each commit
// new minutes) into its stages: prepare, which runs on every core
// (ns/line of CPU at -cpu 1), and write, the transaction, which is serial
// and sets the ceiling of a replay on many cores.
func BenchmarkCommitStages(b *testing.B) {
	for _, stage := range []string{"prepare", "write"} {
		b.Run(stage, func(b *testing.B) {
			s := openBench(b)
			rng := rand.New(rand.NewPCG(1, 2))
			paths := makePaths(200)
			at := t0.Unix() * 10 // tenths of a second
			batch := tally.NewBatch()
			fill := func() {
				batch.Reset()
				for range 50_000 {
					h := logtally.Hit{Time: at / 10, Path: paths[int(float64(len(paths))*rng.Float64()*rng.Float64())]}
					if rng.IntN(3) > 0 {
						h.PageView, h.Visitor = true, rng.Uint64N(5000)*0x9e3779b97f4a7c15
					}
					addHit(batch, h, 200, 5000, false)
					at++
				}
			}
			bs := []*tally.Batch{batch}
			entries := make([][]byte, 1)
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				fill()
				if stage == "prepare" {
					b.StartTimer()
				}
				preps := s.prepare(bs)
				if stage == "write" {
					b.StartTimer()
				}
				if err := s.commitPrepared(bs, entries, preps); err != nil {
					b.Fatal(err)
				}
				s.release(preps)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/50_000, "ns/line")
		})
	}
}

// BenchmarkMergeTop is a busy minute's top pages chosen as prepare does
// for a new minute: 200 paths of a few views each (most tied), the 100
// kept.
func BenchmarkMergeTop(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	sections := []string{"blog", "items", "docs", "tags"}
	pages := make([]logtally.PageCount, 200)
	for i := range pages {
		pages[i] = logtally.PageCount{Path: fmt.Sprintf("/%s/%d", sections[i%4], i), PageViews: int64(1 + rng.IntN(3))}
	}
	b.ReportAllocs()
	for b.Loop() {
		var r record
		r.mergeTop(pages, 100)
	}
}

// BenchmarkSeriesBusy: two hours of minutes of n distinct visitors each
// (a busy site), read at a 5-minute step, while the minutes keep their
// sets (the last two hours of a live store: a set of more than denseFrom
// visitors goes into the union as a dense sketch, hash by hash) and once
// compacted into sketches.
func BenchmarkSeriesBusy(b *testing.B) {
	for _, n := range []int{3000, 20000} {
		for _, compacted := range []bool{false, true} {
			b.Run(fmt.Sprintf("visitors=%d/compacted=%t", n, compacted), func(b *testing.B) {
				span := 3 * time.Hour
				if compacted {
					span = time.Minute
				}
				s, err := Open(Config{Path: filepath.Join(b.TempDir(), "db"), TZ: "UTC", ExactVisitorsSpan: span}, fixedNow)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				rng := rand.New(rand.NewPCG(1, 2))
				for m := range int64(120) {
					batch := tally.NewBatch()
					for i := range n {
						addHit(batch, logtally.Hit{Time: t0.Unix() + 60*m + int64(i%60), PageView: true, Visitor: rng.Uint64(), Path: []byte("/")}, 200, 1, false)
					}
					if err := s.Commit(batch); err != nil {
						b.Fatal(err)
					}
				}
				s.writeMu.Lock()
				s.def.written = writes{}
				s.writeMu.Unlock()
				if _, err := s.Prune(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := s.Series(t0, t0.Add(2*time.Hour-time.Second), 5*time.Minute); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCommitSites measures a replay's commit of many sites: 100,000
// lines of 100 sites, 6 a site a minute (as bench/sites replays them),
// each in its site's batch and in the all-sites view's, on top of the
// hours before. 200 paths, 5,000 visitors, two thirds page views. What
// grows with the sites is here: a record per site and minute, and each
// site's hours and days merged once a commit.
func BenchmarkCommitSites(b *testing.B) {
	const sites, lines = 100, 100_000
	s := openBench(b)
	rng := rand.New(rand.NewPCG(1, 2))
	paths := makePaths(200)
	batches := []*tally.Batch{tally.NewSiteBatch(logtally.AllSites)}
	for i := range sites {
		batches = append(batches, tally.NewSiteBatch(fmt.Sprintf("site%d.example", i)))
	}
	step := time.Minute / (6 * sites)
	at := t0.Add(-12 * time.Hour)
	fill := func() {
		for _, bt := range batches {
			bt.Reset()
		}
		for i := range lines {
			h := logtally.Hit{Time: at.Add(time.Duration(i) * step).Unix(), Path: paths[rng.IntN(len(paths))]}
			if rng.IntN(3) > 0 {
				h.PageView, h.Visitor = true, rng.Uint64N(5000)*0x9e3779b97f4a7c15
			}
			addHit(batches[0], h, 200, 5000, false)
			addHit(batches[1+rng.IntN(sites)], h, 200, 5000, false)
		}
		at = at.Add(lines * step)
	}
	for range 3 { // history to commit on top of
		fill()
		if err := s.Commit(batches...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		fill()
		b.StartTimer()
		if err := s.Commit(batches...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/commit")
}

// BenchmarkDayTotals reads the totals of a busy day, 24 hours of 3,000
// visitors each (dense sketches): made from its hours while it is the
// newest, kept as them (lazy), and read from its record once a prune
// stored it.
func BenchmarkDayTotals(b *testing.B) {
	for _, stored := range []bool{false, true} {
		b.Run(fmt.Sprintf("stored=%t", stored), func(b *testing.B) {
			clock := t0.Add(3 * 24 * time.Hour)
			s, err := Open(Config{Path: filepath.Join(b.TempDir(), "db"), TZ: "UTC"}, func() time.Time { return clock })
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			day := t0.Truncate(24 * time.Hour)
			rng := rand.New(rand.NewPCG(3, 4))
			for h := range int64(24) {
				batch := tally.NewBatch()
				for range 3000 {
					hit := logtally.Hit{Time: day.Unix() + h*3600 + rng.Int64N(3600), PageView: true,
						Visitor: rng.Uint64(), Path: []byte("/"), Status: 200}
					batch.Add(&hit, false)
				}
				if err := s.Commit(batch); err != nil {
					b.Fatal(err)
				}
			}
			if stored { // a line of the next day makes this one a day before the newest
				batch := tally.NewBatch()
				hit := logtally.Hit{Time: day.Unix() + 25*3600, PageView: true, Visitor: 1, Path: []byte("/")}
				batch.Add(&hit, false)
				if err := s.Commit(batch); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Prune(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Totals(day, day); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
