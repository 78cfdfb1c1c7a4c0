package window

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// steadyStream is a 10-minute window fed 1,000 lines a second, 70% of them
// page views, from 20,000 visitors over 2,000 paths, with some lines a
// little late: the window is full, so every second that arrives evicts one.
type steadyStream struct {
	w    *Window
	hits []logtally.Hit
	i    int
	sec  int64
}

const steadyPerSec = 1000

func newSteadyStream() *steadyStream {
	rng := rand.New(rand.NewPCG(7, 7))
	paths := make([][]byte, 2000)
	for i := range paths {
		paths[i] = fmt.Appendf(nil, "/section/%d/article-%d", i%37, i)
	}
	st := &steadyStream{w: New(DefaultConfig(), t0), sec: t0.Unix()}
	st.hits = make([]logtally.Hit, 1<<16)
	for i := range st.hits {
		st.hits[i] = logtally.Hit{
			Time:     -int64(rng.IntN(4) / 3 * rng.IntN(30)), // offset from now: a quarter are late
			PageView: rng.IntN(10) < 7,
			Visitor:  mix(uint64(rng.IntN(20_000))),
			Path:     paths[int(rng.ExpFloat64()*200)%len(paths)],
		}
	}
	for range 600 * steadyPerSec { // fill the window
		st.next()
	}
	return st
}

func (st *steadyStream) next() {
	if st.i%steadyPerSec == 0 {
		st.sec++
		st.w.Advance(time.Unix(st.sec, 0))
	}
	h := st.hits[st.i%len(st.hits)]
	h.Time += st.sec
	st.w.Add(h)
	st.i++
}

// BenchmarkAdd is the cost of one line in steady state, evictions included.
func BenchmarkAdd(b *testing.B) {
	st := newSteadyStream()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := threadCPU()
	for range b.N {
		st.next()
	}
	if cpu > 0 {
		b.ReportMetric(float64(threadCPU()-cpu)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkSnapshotRead reads the current snapshot from parallel readers,
// as the API does, while ingest adds lines and publishes in another
// goroutine.
func BenchmarkSnapshotRead(b *testing.B) {
	st := newSteadyStream()
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			for range 250 {
				st.next()
			}
			st.w.Publish()
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	var sink atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		var n int64
		for pb.Next() {
			s := st.w.Current()
			n += s.Visitors + s.PageViews + int64(len(s.Pages))
		}
		sink.Add(n)
	})
	b.StopTimer()
	stop.Store(true)
	<-done
	b.ReportMetric(float64(st.i-600*steadyPerSec), "ingest-lines")
}

// BenchmarkPublish is the cost of a snapshot when every path has changed.
func BenchmarkPublish(b *testing.B) {
	st := newSteadyStream()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		st.next()
		st.w.Publish()
	}
}

// BenchmarkHeap reports the live heap of a window holding a large load, as
// heap-MB; run it with
//
//	go test ./window -run '^$' -bench Heap -benchtime 1x
//
// The loads: one million visitors and 100,000 paths; ten million page views
// of random paths (a scanner) from 1,000 visitors, and from 100,000. In the
// last, every page view is a new path ref and a visitor's new latest second:
// the load that compactRefs and visitorCount.compact are for. heap-MB is the live
// heap once the window is full; peak-heap-MB the largest live heap seen
// (measured every million page views) on the way.
func BenchmarkHeap(b *testing.B) {
	loads := []struct {
		name      string
		pageviews int
		visitor   func(i int) uint64
		path      func(i int, buf []byte, rng *rand.Rand) []byte
	}{
		{"visitors=1M/paths=100k", 1_000_000,
			func(i int) uint64 { return mix(uint64(i)) },
			func(i int, buf []byte, _ *rand.Rand) []byte {
				return fmt.Appendf(buf, "/section/%d/article-%d", i%37, i%100_000)
			}},
		{"paths=10M-random/visitors=1k", 10_000_000,
			func(i int) uint64 { return mix(uint64(i % 1000)) },
			func(i int, buf []byte, rng *rand.Rand) []byte {
				return fmt.Appendf(buf, "/wp-admin/%016x.php", rng.Uint64())
			}},
		{"paths=10M-random/visitors=100k", 10_000_000,
			func(i int) uint64 { return mix(uint64(i % 100_000)) },
			func(i int, buf []byte, rng *rand.Rand) []byte {
				return fmt.Appendf(buf, "/wp-admin/%016x.php", rng.Uint64())
			}},
	}
	for _, l := range loads {
		b.Run(l.name, func(b *testing.B) {
			for range b.N {
				rng := rand.New(rand.NewPCG(8, 8))
				before := liveHeap()
				w := New(DefaultConfig(), t0)
				var buf []byte
				peak := uint64(0)
				for i := range l.pageviews {
					if i%1_000_000 == 999_999 {
						peak = max(peak, liveHeap()-before)
					}
					sec := t0.Unix() - 599 + int64(i)*600/int64(l.pageviews)
					buf = l.path(i, buf[:0], rng)
					w.Add(logtally.Hit{Time: sec, PageView: true, Visitor: l.visitor(i), Path: buf})
				}
				s := publish(w)
				if s.PageViews != int64(l.pageviews) {
					b.Fatalf("%d page views in the window, want %d", s.PageViews, l.pageviews)
				}
				heap := liveHeap() - before
				b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
				b.ReportMetric(float64(max(peak, heap))/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(s.Visitors), "visitors")
				b.ReportMetric(float64(w.paths.len()), "paths")
				runtime.KeepAlive(w)
			}
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
