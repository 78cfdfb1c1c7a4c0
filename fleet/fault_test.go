package fleet

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/tally"
)

// shipper applies one node's batches in order the way the daemon's shipper
// does: on an error it sends the same batch again until it is applied or
// acknowledged as a duplicate. It counts the errors it retried.
type shipper struct {
	s       *Store
	node    string
	batches []*tally.Batch
	// shipped is called after batch seq is acknowledged.
	shipped func(seq uint64)
	retries atomic.Int64
	dups    atomic.Int64
}

func (sh *shipper) run(ctx context.Context) error {
	for i, b := range sh.batches {
		seq := uint64(i + 1)
		for {
			applied, err := sh.s.Apply(ctx, sh.node, seq, b)
			if err == nil {
				if !applied {
					sh.dups.Add(1)
				}
				break
			}
			if errors.Is(err, ErrGap) || ctx.Err() != nil {
				return err
			}
			sh.retries.Add(1)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		if sh.shipped != nil {
			sh.shipped(seq)
		}
	}
	return nil
}

// shipAll ships every node's batches at once, each through its own store,
// with fault running beside them until they are done, and returns the
// shippers.
func shipAll(t *testing.T, url string, w *workload, fault func(ctx context.Context, progress func() int)) []*shipper {
	t.Helper()
	ctx := testContext(t)
	var done atomic.Int64
	shippers := make([]*shipper, len(w.batches))
	for n := range w.batches {
		cfg := DefaultConfig()
		cfg.URL, cfg.Node = url, nodeName(n)
		s, err := Open(ctx, cfg, discard())
		if err != nil {
			t.Fatal(err)
		}
		s.Now = func() time.Time { return time.Unix(t0+3600, 0) }
		t.Cleanup(s.Close)
		shippers[n] = &shipper{s: s, node: cfg.Node, batches: w.batches[n], shipped: func(uint64) { done.Add(1) }}
	}
	faultCtx, stopFault := context.WithCancel(ctx)
	faultDone := make(chan struct{})
	go func() {
		defer close(faultDone)
		fault(faultCtx, func() int { return int(done.Load()) })
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(shippers))
	for n, sh := range shippers {
		wg.Go(func() { errs[n] = sh.run(ctx) })
	}
	wg.Wait()
	stopFault()
	<-faultDone
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return shippers
}

func retried(shippers []*shipper) (retries, dups int64) {
	for _, sh := range shippers {
		retries += sh.retries.Load()
		dups += sh.dups.Load()
	}
	return retries, dups
}

// checkShipped compares the fleet's counts with the truth and each cursor
// with the node's last batch.
func checkShipped(t *testing.T, s *Store, w *workload) {
	t.Helper()
	checkAgainstTruth(t, s, w.lines)
	for n, bs := range w.batches {
		if last, err := s.LastSeq(testContext(t), logtally.DefaultSite, nodeName(n)); err != nil || last != uint64(len(bs)) {
			t.Errorf("cursor of %s = %d, %v; want %d", nodeName(n), last, err, len(bs))
		}
	}
}

// TestApplyExactlyOnceWhenBackendsAreTerminated cuts every connection
// with pg_terminate_backend, again and again, while three nodes ship: each
// node retries what failed, and every batch counts exactly once.
func TestApplyExactlyOnceWhenBackendsAreTerminated(t *testing.T) {
	srv := pgtest.Start(t)
	w := generate(rand.New(rand.NewPCG(11, 12)), 3, 12, 1500)
	var terminated int
	shippers := shipAll(t, srv.URL(), w, func(ctx context.Context, _ func() int) {
		rng := rand.New(rand.NewPCG(13, 14))
		for ctx.Err() == nil {
			n, err := srv.TerminateOthers(ctx)
			if err == nil {
				terminated += n
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(5+rng.IntN(40)) * time.Millisecond):
			}
		}
	})
	retries, dups := retried(shippers)
	t.Logf("%d backends terminated, %d applies retried, %d acknowledged as duplicates", terminated, retries, dups)
	if retries == 0 {
		t.Error("no Apply failed: the fault was not injected")
	}
	checkShipped(t, open(t, srv.URL(), "reader", time.Unix(t0+3600, 0)), w)
}

// TestApplyExactlyOnceAcrossImmediateStop stops PostgreSQL as a crash
// would (-m immediate) while three nodes ship, then starts it again on the
// same data and port: the nodes retry, and every batch counts exactly once.
func TestApplyExactlyOnceAcrossImmediateStop(t *testing.T) {
	srv := pgtest.Start(t)
	w := generate(rand.New(rand.NewPCG(21, 22)), 3, 12, 1500)
	total := 3 * 12
	var stops int
	shippers := shipAll(t, srv.URL(), w, func(ctx context.Context, progress func() int) {
		// Stop twice: after a third and after two thirds of the batches.
		for _, at := range []int{total / 3, 2 * total / 3} {
			for progress() < at {
				if ctx.Err() != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
			srv.StopImmediate()
			stops++
			time.Sleep(200 * time.Millisecond) // the shippers fail meanwhile
			srv.Restart()
		}
	})
	retries, dups := retried(shippers)
	t.Logf("%d immediate stops, %d applies retried, %d acknowledged as duplicates", stops, retries, dups)
	if stops != 2 || retries == 0 {
		t.Errorf("%d stops, %d retries: the fault was not injected", stops, retries)
	}
	checkShipped(t, open(t, srv.URL(), "reader", time.Unix(t0+3600, 0)), w)
}

// TestApplyLostCommitReplyIsDuplicate loses the reply to a COMMIT on the
// wire (a proxy forwards it and cuts the client): Apply fails, yet the
// batch was applied, and sending it again is acknowledged as a duplicate.
func TestApplyLostCommitReplyIsDuplicate(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := testContext(t)
	node := nodeName(0)
	proxy := srv.Proxy(t)
	s := open(t, proxy.URL(), node, time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(31, 32)), 1, 4, 300)
	for i, b := range w.batches[0] {
		seq := uint64(i + 1)
		if i == 1 || i == 3 {
			proxy.LoseCommitReplies(1)
			if applied, err := s.Apply(ctx, node, seq, b); err == nil {
				t.Fatalf("Apply %d with its reply lost = %v, nil; want an error", seq, applied)
			}
			// The retry waits for the cursor's lock, which the lost
			// transaction holds until its COMMIT is done: it then finds the
			// batch applied.
			if applied, err := s.Apply(ctx, node, seq, b); applied || err != nil {
				t.Fatalf("Apply %d again = %v, %v; want false, nil (a duplicate)", seq, applied, err)
			}
			continue
		}
		if applied, err := s.Apply(ctx, node, seq, b); !applied || err != nil {
			t.Fatalf("Apply %d = %v, %v", seq, applied, err)
		}
	}
	if proxy.Lost() != 2 {
		t.Errorf("%d replies lost, want 2", proxy.Lost())
	}
	checkShipped(t, s, w)
}

// TestApplyAcknowledgementLostByCaller is the same fault one step later:
// Apply commits and returns, and the caller dies before it records that.
// It sends the batch again after a restart, and it is a duplicate.
func TestApplyAcknowledgementLostByCaller(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := testContext(t)
	node := nodeName(0)
	w := generate(rand.New(rand.NewPCG(41, 42)), 1, 3, 300)
	s := open(t, srv.URL(), node, time.Unix(t0+3600, 0))
	for i, b := range w.batches[0] {
		if applied, err := s.Apply(ctx, node, uint64(i+1), b); !applied || err != nil {
			t.Fatalf("Apply %d = %v, %v", i+1, applied, err)
		}
	}
	// A new process of the same node, whose outbox still holds batch 3.
	again := open(t, srv.URL(), node, time.Unix(t0+3600, 0))
	if applied, err := again.Apply(ctx, node, 3, w.batches[0][2]); applied || err != nil {
		t.Errorf("Apply 3 again = %v, %v; want false, nil", applied, err)
	}
	checkShipped(t, again, w)
}
