package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tally"
)

// benchSource makes one node's batches as a busy site's would be: seven
// in ten lines are page views, visitors are drawn from 20,000 and paths
// from 2,000 shared by all nodes, times move forward at rate lines a
// second.
type benchSource struct {
	rng  *rand.Rand
	rate int64 // lines per second
	n    int64 // lines made so far
	t0   int64 // second of the first line
}

var benchDBs atomic.Int64 // numbers the benchmarks' databases

func (src *benchSource) batch(lines int) *tally.Batch {
	b := tally.NewBatch()
	for range lines {
		sec := src.t0 + src.n/src.rate
		src.n++
		h := &logtally.Hit{Time: sec, Bytes: 5000, Status: 200, Path: fmt.Appendf(nil, "/articles/%d", src.rng.IntN(2000))}
		if src.rng.IntN(10) < 7 {
			h.PageView = true
			h.Visitor = src.rng.Uint64N(20_000) * 0x9e3779b97f4a7c15
		}
		b.Add(h, true)
	}
	b.AddLines(int64(lines))
	return b
}

// BenchmarkApply ships batches of 1,000 and 50,000 lines to a local
// PostgreSQL (fsync on) from one node, and from three nodes at once, and
// reports batches and lines shipped per second. It skips where PostgreSQL
// is not installed.
func BenchmarkApply(b *testing.B) {
	srv := pgtest.Start(b, "fsync=on", "shared_buffers=128MB")
	for _, nodes := range []int{1, 3} {
		for _, lines := range []int{1000, 50_000} {
			b.Run(fmt.Sprintf("nodes=%d/lines=%d", nodes, lines), func(b *testing.B) {
				url, err := srv.CreateDatabase(context.Background(), fmt.Sprintf("bench_%d", benchDBs.Add(1)))
				if err != nil {
					b.Fatal(err)
				}
				now := time.Now()
				stores := make([]*Store, nodes)
				sources := make([]*benchSource, nodes)
				for n := range nodes {
					stores[n] = open(b, url, nodeName(n), now.Add(24*time.Hour))
					sources[n] = &benchSource{rng: rand.New(rand.NewPCG(uint64(n), 1)), rate: 5000, t0: now.Unix()}
				}
				ctx := context.Background()
				batches := make([]*tally.Batch, nodes)
				b.ReportAllocs()
				b.ResetTimer()
				var elapsed time.Duration
				for i := range b.N {
					b.StopTimer()
					for n := range nodes {
						batches[n] = sources[n].batch(lines)
					}
					b.StartTimer()
					start := time.Now()
					var wg sync.WaitGroup
					for n := range nodes {
						wg.Go(func() {
							if _, err := apply(ctx, stores[n], nodeName(n), uint64(i+1), batches[n]); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
					elapsed += time.Since(start)
				}
				shipped := float64(b.N * nodes)
				b.ReportMetric(shipped/elapsed.Seconds(), "batches/s")
				b.ReportMetric(shipped*float64(lines)/elapsed.Seconds(), "lines/s")
			})
		}
	}
}

// BenchmarkWindow measures one read of the live window, which ends at the
// database's clock (what each node does every --fleet-refresh), over ten minutes of a three-node site at 500
// lines a second each.
func BenchmarkWindow(b *testing.B) {
	const rate = 500
	srv := pgtest.Start(b, "shared_buffers=128MB")
	now := time.Now().Truncate(time.Second)
	s := open(b, srv.URL(), "a", now)
	ctx := context.Background()
	for n := range 3 {
		src := &benchSource{rng: rand.New(rand.NewPCG(uint64(n), 2)), rate: rate, t0: now.Unix() - 599}
		for i := range 60 {
			if _, err := apply(ctx, s, nodeName(n), uint64(i+1), src.batch(rate*10)); err != nil {
				b.Fatal(err)
			}
		}
	}
	// What autovacuum would have done by then: statistics and the
	// visibility map that index-only scans need.
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var snap logtally.Snapshot
	for b.Loop() {
		var err error
		if snap, _, err = s.LiveWindow(ctx, logtally.DefaultSite, DefaultWindow); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if snap.Requests != 3*600*rate {
		b.Errorf("window holds %d requests, want %d", snap.Requests, 3*600*rate)
	}
	b.Logf("window: %d requests, %d visitors, %d pages", snap.Requests, snap.Visitors, len(snap.Pages))
}

// BenchmarkShip measures shipping end to end: each node's Node sends a
// backlog of b.N committed batches from its bbolt outbox to a local
// PostgreSQL (fsync on), one transaction per batch, deleting what was
// acknowledged, with its Refresher reading the fleet's window meanwhile.
// It reports batches and lines shipped per second, all nodes together,
// for one node and for three at once, with batches of 100 lines (a second
// of a quiet node), 1,000 (of a busy one) and 50,000 (a full commit). The backlog is
// committed before the clock starts. It skips where PostgreSQL is not
// installed.
func BenchmarkShip(b *testing.B) {
	srv := pgtest.Start(b, "fsync=on", "shared_buffers=128MB")
	for _, nodes := range []int{1, 3} {
		for _, lines := range []int{100, 1000, 50_000} {
			b.Run(fmt.Sprintf("nodes=%d/lines=%d", nodes, lines), func(b *testing.B) {
				url, err := srv.CreateDatabase(context.Background(), fmt.Sprintf("ship_%d", benchDBs.Add(1)))
				if err != nil {
					b.Fatal(err)
				}
				now := time.Now()
				outboxes := make([]Outbox, nodes)
				for n := range nodes {
					local, err := storage.Open(storage.Config{Path: filepath.Join(b.TempDir(), "db"), TZ: "UTC", Outbox: true}, nil)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { local.Close() })
					src := &benchSource{rng: rand.New(rand.NewPCG(uint64(n), 3)), rate: 5000, t0: now.Unix()}
					for range b.N {
						if err := local.Commit(src.batch(lines)); err != nil {
							b.Fatal(err)
						}
					}
					outboxes[n] = local.Outbox()
				}
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for n := range nodes {
					cfg := DefaultConfig()
					cfg.Verifier = testVerifier
					cfg.URL, cfg.Node = url, nodeName(n)
					node := NewNode(cfg, outboxes[n], discard(), nil)
					node.Start(context.Background())
					wg.Go(func() {
						defer node.Close()
						for st := node.Stats(); st.Outbox.Entries > 0 || st.Acked < uint64(b.N); st = node.Stats() {
							if st.State == StateStopped {
								b.Error(st.LastError)
								return
							}
							time.Sleep(time.Millisecond)
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				shipped := float64(b.N * nodes)
				b.ReportMetric(shipped/elapsed.Seconds(), "batches/s")
				b.ReportMetric(shipped*float64(lines)/elapsed.Seconds(), "lines/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
