package fleet

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
)

// lostCommits is a fleet database that crashed after a node's batches 1
// and 2 were made durable and 3 and 4 were committed without waiting for
// the disk: the crash lost 3 and 4.
type lostCommits struct {
	s     *Store
	node  Ident
	es    []Entry
	w     *workload
	fence error // the first fence through 4 on the restarted server
}

// crashAfterLazyCommits makes a lostCommits, or skips the test if the
// crash happened to lose nothing.
func crashAfterLazyCommits(t *testing.T) *lostCommits {
	t.Helper()
	ctx := testContext(t)
	// The WAL writer waits 10 s: a lazy commit stays in memory until a
	// commit that waits, or the crash.
	srv := pgtest.Start(t, "wal_writer_delay=10000ms")
	lc := &lostCommits{s: open(t, srv.URL(), "a", time.Unix(t0+3600, 0)), node: testIdent(nodeName(0)),
		w: generate(rand.New(rand.NewPCG(7, 8)), 1, 4, 300)}
	lc.es = entries(t, 1, logtally.EntrySum{}, lc.w.batches[0])
	if _, _, err := lc.s.Register(ctx, lc.node, false); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.s.ApplyEntries(ctx, lc.node, lc.es[:2]); err != nil {
		t.Fatal(err)
	}
	if err := lc.s.Fence(ctx, lc.node, 2); err != nil {
		t.Fatalf("Fence of batches committed to disk: %v", err)
	}
	if _, err := lc.s.applyEntries(ctx, lc.node, lc.es[2:], true); err != nil {
		t.Fatal(err)
	}
	srv.StopImmediate()
	srv.Restart()
	poll.Until(t, "the fleet database to answer again", func() bool {
		lc.fence = lc.s.Fence(ctx, lc.node, 4)
		return lc.fence == nil || errors.Is(lc.fence, ErrGap)
	})
	last, err := lc.s.LastSeq(ctx, lc.node.Name)
	if err != nil {
		t.Fatal(err)
	}
	if last == 4 {
		t.Skip("the crash lost no commit this time: nothing to fence against")
	}
	if last != 2 {
		t.Fatalf("cursor after the crash = %d, want 2 (durable) or 4 (nothing lost)", last)
	}
	return lc
}

// TestFenceAfterACrashLostCommits: batches applied without waiting for
// the disk, then lost by a crash of the fleet database before the node
// fenced them, are not fenced by a fence on the restarted server: Fence
// fails with ErrGap, so the node keeps them and sends them again; once
// they are applied again, the fence holds. Before, Fence only touched the
// node's row, which the restarted server committed, and the node deleted
// batches the fleet had lost (ErrFleetBehind at its next resync, and
// shipping stopped: TestNodeExactlyOnceAcrossImmediateStop, now and then).
func TestFenceAfterACrashLostCommits(t *testing.T) {
	t.Parallel()
	lc := crashAfterLazyCommits(t)
	if !errors.Is(lc.fence, ErrGap) {
		t.Fatalf("Fence through 4 after the crash lost 3 and 4: %v, want ErrGap", lc.fence)
	}
	ctx := testContext(t)
	if _, err := lc.s.ApplyEntries(ctx, lc.node, lc.es[2:]); err != nil {
		t.Fatal(err)
	}
	if err := lc.s.Fence(ctx, lc.node, 4); err != nil {
		t.Errorf("Fence once they were sent again: %v", err)
	}
}

// TestResentAfterACrashCountsVisitors: batches a crash lost, sent again
// through the same Store after Fence found them lost, add their visitors
// to the minutes', hours' and days' sets. Before, the Store still
// remembered having sent those visitors (sentSets) from the lost commits
// and left them out of the batches sent again, so the fleet counted fewer
// visitors than there were: TestNodeExactlyOnceAcrossImmediateStop, now
// and then, with a minute short of a visitor or two.
func TestResentAfterACrashCountsVisitors(t *testing.T) {
	t.Parallel()
	lc := crashAfterLazyCommits(t)
	if _, err := lc.s.ApplyEntries(testContext(t), lc.node, lc.es[2:]); err != nil {
		t.Fatal(err)
	}
	checkShipped(t, lc.s, lc.w)
}
