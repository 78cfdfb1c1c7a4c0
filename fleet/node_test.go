package fleet

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/storage"
)

// localStore opens a node's bbolt store with the outbox on.
func localStore(t *testing.T) *storage.Store {
	t.Helper()
	s, err := storage.Open(storage.Config{Path: filepath.Join(t.TempDir(), "db"), TZ: "UTC", Outbox: true},
		func() time.Time { return time.Unix(t0+3600, 0) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startNode starts a Node of url named name on the store's outbox, with its
// clock and the database's at the newest line, so that its pruner keeps the
// live seconds, and stops it when the test ends.
func startNode(t *testing.T, url, name string, local *storage.Store) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node, cfg.Refresh = url, name, 50*time.Millisecond
	now := time.Unix(t0+liveSpan, 0)
	cfg.URL = pinClock(url, now)
	n := NewNode(cfg, local.Outbox(), discard(), func() time.Time { return now })
	n.Start(testContext(t))
	t.Cleanup(n.Close)
	return n
}

// shippedAll reports whether a node has shipped and deleted every batch
// its store committed.
func shippedAll(n *Node, committed int) bool {
	st := n.Stats()
	return st.Outbox.Entries == 0 && st.Acked == uint64(committed) && st.State == StateShipping
}

// TestNodeShipsOutboxExactlyOnce commits three nodes' batches to their
// local stores, half before their Nodes start and half while they ship,
// through a proxy that loses COMMIT replies: every batch counts exactly
// once, and each node's outbox ends empty.
func TestNodeShipsOutboxExactlyOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	proxy := pgtest.NewProxy(t, url)
	w := generate(rand.New(rand.NewPCG(51, 52)), 3, 10, 400)
	locals := make([]*storage.Store, 3)
	for i := range locals {
		locals[i] = localStore(t)
		for _, b := range w.batches[i][:5] {
			if err := locals[i].Commit(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	nodes := make([]*Node, 3)
	for i := range nodes {
		nodes[i] = startNode(t, proxy.URL(), nodeName(i), locals[i])
	}
	proxy.LoseCommitReplies(3)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			for _, b := range w.batches[i][5:] {
				if err := locals[i].Commit(b); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var dups, failures int64
	for i, n := range nodes {
		poll.Until(t, nodeName(i)+" to ship everything", func() bool { return shippedAll(n, 10) })
		dups += n.Stats().Duplicates
		failures += n.Stats().Failures
	}
	if err := proxy.AwaitLost(testContext(t), 3); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d replies lost, %d failures retried, %d duplicates", proxy.Lost(), failures, dups)
	checkShipped(t, open(t, url, "reader", time.Unix(t0+3600, 0)), w)
	poll.Until(t, "a view", func() bool { return nodes[0].Current() != nil })
	if c := nodes[0].Stats().Clock; c.Measured.IsZero() || c.Offset != 0 || c.MaxSkew != DefaultMaxSkew {
		t.Errorf("Stats().Clock = %+v, want measured, no offset, the default max skew", c)
	}
}

// TestNodeResync starts nodes whose outboxes disagree with the fleet's
// cursor in each way that can happen.
func TestNodeResync(t *testing.T) {
	t.Parallel()
	// Each case has a workload of its own (the same one): the cases run in
	// parallel, and a local commit sorts a batch's visitors in place.
	work := func() *workload { return generate(rand.New(rand.NewPCG(61, 62)), 1, 4, 100) }
	fill := func(t *testing.T, s *storage.Store, w *workload) {
		for _, b := range w.batches[0] {
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	// applyDirect applies batches 1..n as a node that died before it
	// deleted them from its outbox would have.
	applyDirect := func(t *testing.T, url, node string, n int, w *workload) {
		s := open(t, url, node, time.Unix(t0+3600, 0))
		for i, b := range w.batches[0][:n] {
			if _, err := apply(testContext(t), s, node, uint64(i+1), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("acknowledgement lost", func(t *testing.T) {
		t.Parallel()
		url := pgtest.Database(t)
		w := work()
		local := localStore(t)
		fill(t, local, w)
		applyDirect(t, url, nodeName(0), 3, w)
		local.Outbox().SetNodeID(testIdent(nodeName(0)).ID) // the database that shipped them
		n := startNode(t, url, nodeName(0), local)
		poll.Until(t, "shipping", func() bool { return shippedAll(n, 4) })
		if st := n.Stats(); st.Duplicates != 3 || st.Applied != 1 {
			t.Errorf("stats = %+v, want 3 duplicates and 1 applied", st)
		}
		checkShipped(t, open(t, url, "reader", time.Unix(t0+3600, 0)), w)
	})
	stopped := func(t *testing.T, n *Node, want error) {
		poll.Until(t, "shipping to stop", func() bool { return n.Stats().State == StateStopped })
		if st := n.Stats(); !errors.Is(st.LastError, want) || st.Applied != 0 {
			t.Errorf("stats = %+v, want %v and nothing applied", st, want)
		}
		if why := n.Why(); why != "shipping stopped: "+want.Error() {
			t.Errorf("Why = %q, want it to name %v", why, want)
		}
	}
	t.Run("fleet database behind", func(t *testing.T) {
		t.Parallel()
		url := pgtest.Database(t)
		local := localStore(t)
		fill(t, local, work())
		local.Outbox().Delete(2, logtally.EntrySum{}) // lost from the fleet database after it acknowledged them
		stopped(t, startNode(t, url, "a", local), ErrFleetBehind)
	})
	t.Run("name taken", func(t *testing.T) {
		t.Parallel()
		url := pgtest.Database(t)
		w := work()
		applyDirect(t, url, "a", 4, w)
		local := localStore(t) // another database, under the same name
		local.Commit(w.batches[0][0])
		stopped(t, startNode(t, url, "a", local), ErrNameTaken)
	})
	t.Run("database behind", func(t *testing.T) {
		t.Parallel()
		url := pgtest.Database(t)
		w := work()
		applyDirect(t, url, "a", 4, w)
		local := localStore(t) // the database that shipped them, as a backup made after its first batch
		local.Outbox().SetNodeID(testIdent("a").ID)
		local.Commit(w.batches[0][0])
		stopped(t, startNode(t, url, "a", local), ErrBehind)
	})
	t.Run("other secret", func(t *testing.T) {
		t.Parallel()
		url := pgtest.Database(t)
		open(t, url, "first", time.Unix(t0, 0)) // stores testVerifier
		local := localStore(t)
		fill(t, local, work())
		cfg := DefaultConfig()
		cfg.URL, cfg.Node, cfg.Verifier = url, "a", "another secret's verifier"
		n := NewNode(cfg, local.Outbox(), discard(), nil)
		n.Start(testContext(t))
		t.Cleanup(n.Close)
		stopped(t, n, ErrOtherSecret)
	})
}

// TestNodeHistoryBeforeConnecting: the API's history reads say so, rather
// than wait, before the database is reached.
func TestNodeHistoryBeforeConnecting(t *testing.T) {
	t.Parallel()
	n := NewNode(Config{URL: "postgres://127.0.0.1:1/x", Node: "a"}, nil, discard(), nil)
	if _, err := n.Series(time.Unix(t0, 0), time.Unix(t0+60, 0), time.Minute); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Series = %v", err)
	}
	if _, err := n.PathCounts([]string{"/"}, time.Unix(t0, 0)); !errors.Is(err, ErrNotConnected) {
		t.Errorf("PathCounts = %v", err)
	}
	if n.Current() != nil {
		t.Error("a view before any read")
	}
}

// TestNodePublishedBeforeConnecting: a waiter that takes Published before
// the fleet database is reached is woken when it is, and then by the
// first View: the API's event stream hears of the fleet's first counts
// without looking again on a timer, even on a node whose log is quiet.
func TestNodePublishedBeforeConnecting(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node, cfg.Refresh = pgtest.Database(t), "a", 50*time.Millisecond
	n := NewNode(cfg, localStore(t).Outbox(), discard(), nil)
	next := n.Published()
	if next == nil {
		t.Fatal("Published = nil before the database is reached")
	}
	n.Start(testContext(t))
	t.Cleanup(n.Close)
	ctx := testContext(t)
	for n.Current() == nil {
		select {
		case <-next:
			next = n.Published()
		case <-ctx.Done():
			t.Fatal("no View told before the test's deadline")
		}
	}
}

// TestCheckRefusesASecondDatabaseUnderOneName starts two nodes with one
// name and two databases at once: whatever the timing, one registers and
// the other is refused, rather than both shipping batches that the fleet
// takes for each other's duplicates.
func TestCheckRefusesASecondDatabaseUnderOneName(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		n := NewNode(Config{URL: url, Node: "same", Verifier: testVerifier}, localStore(t).Outbox(), discard(), nil)
		t.Cleanup(n.Close)
		wg.Go(func() { errs[i] = n.Check(testContext(t), true) })
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		switch {
		case errors.Is(err, ErrNameTaken):
			refused++
		case err != nil:
			t.Errorf("Check = %v", err)
		}
	}
	if refused != 1 {
		t.Errorf("Check = %v; want one node refused with ErrNameTaken", errs)
	}
}

// TestNodeExactlyOnceAcrossImmediateStop stops PostgreSQL as a crash
// would, twice, each time just after a node's batch was acknowledged:
// a node's commits do not wait for the disk (applyEntries), so the crash
// may lose acknowledged batches, which the outbox still holds until
// Fence. The nodes send them again, and every batch counts exactly once.
func TestNodeExactlyOnceAcrossImmediateStop(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t) // its own: the test stops it
	w := generate(rand.New(rand.NewPCG(61, 62)), 3, 12, 600)
	locals := make([]*storage.Store, 3)
	nodes := make([]*Node, 3)
	for i := range nodes {
		locals[i] = localStore(t)
		nodes[i] = startNode(t, srv.URL(), nodeName(i), locals[i])
	}
	t.Cleanup(func() { // what a node was doing, if it never shipped everything
		if t.Failed() {
			for i, n := range nodes {
				t.Logf("%s: %+v", nodeName(i), n.Stats())
			}
		}
	})
	commit := func(from, to int) {
		for i := range nodes {
			for _, b := range w.batches[i][from:to] {
				if err := locals[i].Commit(b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, part := range [][2]int{{0, 4}, {4, 8}} {
		before := nodes[0].Stats().Acked
		commit(part[0], part[1])
		poll.Until(t, "node-0 to ship a batch", func() bool { return nodes[0].Stats().Acked > before })
		srv.StopImmediate()
		srv.Restart()
	}
	commit(8, 12)
	for i, n := range nodes {
		poll.Until(t, nodeName(i)+" to ship everything", func() bool { return shippedAll(n, 12) })
		if st := n.Stats(); st.State != StateShipping {
			t.Errorf("%s: state %s (%v)", nodeName(i), st.State, st.LastError)
		}
	}
	checkShipped(t, open(t, srv.URL(), "reader", time.Unix(t0+3600, 0)), w)
}
