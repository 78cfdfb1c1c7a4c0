package fleet

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/storage"
)

var (
	steadyFor   = flag.Duration("steady", 10*time.Second, "how long each BenchmarkSteady run commits")
	steadyNodes = flag.String("steady-nodes", "10", "BenchmarkSteady: comma-separated numbers of nodes")
	steadyRates = flag.String("steady-rates", "2000,10000,25000", "BenchmarkSteady: comma-separated lines a second per node")
)

// BenchmarkSteady measures the fleet as it runs: each of several nodes
// commits one batch a second (the default --commit-interval) of a given
// number of lines, dated that second, into its bbolt outbox, for -steady;
// its Node ships them to one local PostgreSQL (fsync on) and refreshes the
// fleet's window every second. It reports the lag from a batch's commit to
// the fleet's acknowledgement (p50, p99, max), the oldest View a node
// served after the first seconds (view-age-max: now minus as_of), and the
// lines a second shipped by all nodes together. A fleet keeps up with a
// rate while the lag stays near the commit interval. At the end the
// fleet's window must hold every line committed.
//
// Run it with -benchtime 1x (each run is paced by the clock, not by b.N):
//
//	go test -run '^$' -bench Steady -benchtime 1x -steady 10s -steady-rates 2000,20000 ./fleet
func BenchmarkSteady(b *testing.B) {
	srv := pgtest.Start(b, "fsync=on", "shared_buffers=256MB", "max_connections=300")
	for _, nodes := range intList(b, *steadyNodes) {
		for _, rate := range intList(b, *steadyRates) {
			b.Run(fmt.Sprintf("nodes=%d/rate=%d", nodes, rate), func(b *testing.B) {
				for range b.N {
					runSteady(b, srv, nodes, rate)
				}
			})
		}
	}
}

func intList(b *testing.B, s string) []int {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("bad list %q: %v", s, err)
		}
		out = append(out, n)
	}
	return out
}

// steadyNode is one simulated node of BenchmarkSteady.
type steadyNode struct {
	local     *storage.Store
	node      *Node
	src       *benchSource
	mu        sync.Mutex
	committed []time.Time // when each batch was committed: entry i+1's
	lags      []time.Duration
	acked     uint64
}

func runSteady(b *testing.B, srv *pgtest.Server, nodes, rate int) {
	url, err := srv.CreateDatabase(context.Background(), fmt.Sprintf("steady_%d", benchDBs.Add(1)))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now().Truncate(time.Second).Add(time.Second)
	sn := make([]*steadyNode, nodes)
	for n := range sn {
		sn[n] = newSteadyNode(b, url, n, rate, start)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var maxAge time.Duration
	var ageMu sync.Mutex
	for n, s := range sn {
		wg.Go(func() { s.produce(b, start, *steadyFor) })
		wg.Go(func() {
			age := s.watch(ctx, start.Add(3*time.Second))
			if n == 0 {
				ageMu.Lock()
				maxAge = age
				ageMu.Unlock()
			}
		})
	}
	// Producers end after -steady; watchers when every batch is acknowledged.
	deadline := start.Add(*steadyFor + 2*time.Minute)
	for _, s := range sn {
		for !s.caughtUp(int(steadyFor.Seconds())) {
			if time.Now().After(deadline) {
				b.Fatalf("%s: not caught up 2 minutes after the last commit: %+v", s.node.cfg.Node, s.node.Stats())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	var lags []time.Duration
	for _, s := range sn {
		lags = append(lags, s.lags...)
	}
	slices.Sort(lags)
	q := func(p float64) float64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))].Seconds() }
	lines := float64(nodes * rate * int(steadyFor.Seconds()))
	b.ReportMetric(q(0.5), "lag-p50-s")
	b.ReportMetric(q(0.99), "lag-p99-s")
	b.ReportMetric(lags[len(lags)-1].Seconds(), "lag-max-s")
	b.ReportMetric(maxAge.Seconds(), "view-age-max-s")
	b.ReportMetric(lines/elapsed.Seconds(), "lines/s")
	b.ReportMetric(0, "ns/op")
	checkSteadyWindow(b, url, int64(lines))
	for _, s := range sn {
		s.node.Close()
	}
}

func newSteadyNode(b *testing.B, url string, n, rate int, start time.Time) *steadyNode {
	local, err := storage.Open(storage.Config{Path: filepath.Join(b.TempDir(), "db"), TZ: "UTC", Outbox: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { local.Close() })
	cfg := DefaultConfig()
	cfg.URL, cfg.Node, cfg.Verifier = url, nodeName(n), testVerifier
	node := NewNode(cfg, local.Outbox(), discard(), nil)
	node.Start(context.Background())
	src := &benchSource{rng: rand.New(rand.NewPCG(uint64(n), 5)), rate: int64(rate), t0: start.Unix()}
	return &steadyNode{local: local, node: node, src: src}
}

// produce commits one second's lines at the end of each second, from
// start, for d.
func (s *steadyNode) produce(b *testing.B, start time.Time, d time.Duration) {
	for i := range int(d.Seconds()) {
		batch := s.src.batch(int(s.src.rate))
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * time.Second)))
		if err := s.local.Commit(batch); err != nil {
			b.Error(err)
			return
		}
		s.mu.Lock()
		s.committed = append(s.committed, time.Now())
		s.mu.Unlock()
	}
}

// watch records each batch's lag as the node's acknowledgements move, and
// returns the oldest View the node served after from, until ctx is done.
func (s *steadyNode) watch(ctx context.Context, from time.Time) (maxAge time.Duration) {
	for ctx.Err() == nil {
		st := s.node.Stats()
		now := time.Now()
		s.mu.Lock()
		for ; s.acked < st.Acked && int(s.acked) < len(s.committed); s.acked++ {
			s.lags = append(s.lags, now.Sub(s.committed[s.acked]))
		}
		s.mu.Unlock()
		if now.After(from) && !st.AsOf.IsZero() {
			maxAge = max(maxAge, now.Sub(st.AsOf))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return maxAge
}

func (s *steadyNode) caughtUp(batches int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.acked) >= batches
}

// checkSteadyWindow fails b unless the fleet's live window holds lines
// requests.
func checkSteadyWindow(b *testing.B, url string, lines int64) {
	cfg := DefaultConfig()
	cfg.URL, cfg.Node, cfg.Verifier = url, "reader", testVerifier
	st, err := Open(context.Background(), cfg, discard())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	snap, _, err := st.LiveWindow(context.Background(), logtally.DefaultSite, DefaultWindow)
	if err != nil {
		b.Fatal(err)
	}
	if snap.Requests != lines {
		b.Errorf("fleet window holds %d requests, want %d", snap.Requests, lines)
	}
}
