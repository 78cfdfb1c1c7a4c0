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
	ctx := testContext(t)
	// The WAL writer waits 10 s: a lazy commit stays in memory until a
	// commit that waits, or the crash.
	srv := pgtest.Start(t, "wal_writer_delay=10000ms")
	s := open(t, srv.URL(), "a", time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(7, 8)), 1, 4, 300)
	es := entries(t, 1, logtally.EntrySum{}, w.batches[0])
	node := testIdent(nodeName(0))
	if _, _, err := s.Register(ctx, node, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyEntries(ctx, node, es[:2]); err != nil {
		t.Fatal(err)
	}
	if err := s.Fence(ctx, node, 2); err != nil {
		t.Fatalf("Fence of batches committed to disk: %v", err)
	}
	if _, err := s.applyEntries(ctx, node, es[2:], true); err != nil {
		t.Fatal(err)
	}
	srv.StopImmediate()
	srv.Restart()
	var err error
	poll.Until(t, "the fleet database to answer again", func() bool {
		err = s.Fence(ctx, node, 4)
		return err == nil || errors.Is(err, ErrGap)
	})
	last, lerr := s.LastSeq(ctx, node.Name)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if last == 4 {
		t.Skip("the crash lost no commit this time: nothing to fence against")
	}
	if !errors.Is(err, ErrGap) || last != 2 {
		t.Fatalf("Fence through 4 after the crash lost 3 and 4 (cursor %d): %v, want ErrGap", last, err)
	}
	if _, err := s.ApplyEntries(ctx, node, es[2:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Fence(ctx, node, 4); err != nil {
		t.Errorf("Fence once they were sent again: %v", err)
	}
}
