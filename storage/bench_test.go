package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// fillBatch adds n hits of a busy site, starting at start and 10,000,000
// lines a day apart: 100,000 paths, 200,000 visitors, two thirds page views.
func fillBatch(b *logtally.Batch, rng *rand.Rand, paths [][]byte, start time.Time, n int, live bool) time.Time {
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
	s, err := Open(Config{Path: filepath.Join(b.TempDir(), "db"), TZ: "UTC"}, fixedNow)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
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
	batch := logtally.NewBatch()
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
