package fleet

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/tally"
)

// progress is what a fault sees of the shippers: the batches they have
// shipped and the applies they retried. A fault waits on it (await) to
// strike at a point of the shipping rather than at a time, and to know its
// strike was felt, so that no test depends on how fast the machine is.
type progress struct {
	mu      sync.Mutex
	shipped int
	retries int
	dups    int
	changed chan struct{} // closed and made anew at each change
}

func newProgress() *progress { return &progress{changed: make(chan struct{})} }

func (p *progress) add(shipped, retries, dups int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shipped += shipped
	p.retries += retries
	p.dups += dups
	close(p.changed)
	p.changed = make(chan struct{})
}

// counts returns the shipped batches, the retried applies and the batches
// acknowledged as duplicates so far.
func (p *progress) counts() (shipped, retries, dups int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shipped, p.retries, p.dups
}

// await waits until cond holds of the batches shipped and the applies
// retried, and reports true, or until ctx is done (shipping has ended),
// and reports false.
func (p *progress) await(ctx context.Context, cond func(shipped, retries int) bool) bool {
	for {
		p.mu.Lock()
		ok, changed := cond(p.shipped, p.retries), p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// shipper applies one node's batches in order the way the daemon's shipper
// does: on an error it sends the same batch again until it is applied or
// acknowledged as a duplicate. It reports each batch shipped and each
// error retried to progress.
type shipper struct {
	s        *Store
	node     string
	batches  []*tally.Batch
	progress *progress
}

func (sh *shipper) run(ctx context.Context) error {
	for i, b := range sh.batches {
		seq := uint64(i + 1)
		for {
			applied, err := apply(ctx, sh.s, sh.node, seq, b)
			if err == nil {
				sh.progress.add(1, 0, btoi(!applied))
				break
			}
			if errors.Is(err, ErrGap) || ctx.Err() != nil {
				return err
			}
			sh.progress.add(0, 1, 0)
			select { // the daemon's backoff
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shipAll ships every node's batches at once, each through its own store,
// with fault running beside them until they are done, and returns their
// progress.
func shipAll(t *testing.T, url string, w *workload, fault func(ctx context.Context, p *progress)) *progress {
	t.Helper()
	ctx := testContext(t)
	p := newProgress()
	shippers := make([]*shipper, len(w.batches))
	for n := range w.batches {
		cfg := DefaultConfig()
		cfg.Verifier = testVerifier
		cfg.URL, cfg.Node = url, nodeName(n)
		s, err := Open(ctx, cfg, discard())
		if err != nil {
			t.Fatal(err)
		}
		s.Now = func() time.Time { return time.Unix(t0+3600, 0) }
		t.Cleanup(s.Close)
		shippers[n] = &shipper{s: s, node: cfg.Node, batches: w.batches[n], progress: p}
	}
	faultCtx, stopFault := context.WithCancel(ctx)
	faultDone := make(chan struct{})
	go func() {
		defer close(faultDone)
		fault(faultCtx, p)
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
	return p
}

// checkShipped compares the fleet's counts with the truth and each cursor
// with the node's last batch.
func checkShipped(t *testing.T, s *Store, w *workload) {
	t.Helper()
	checkAgainstTruth(t, s, w.lines)
	for n, bs := range w.batches {
		if last, err := s.LastSeq(testContext(t), nodeName(n)); err != nil || last != uint64(len(bs)) {
			t.Errorf("cursor of %s = %d, %v; want %d", nodeName(n), last, err, len(bs))
		}
	}
}

// TestApplyExactlyOnceWhenBackendsAreTerminated cuts every connection
// with pg_terminate_backend, again and again, while three nodes ship, each
// time while an Apply is under way: each node retries what failed, and
// every batch counts exactly once.
func TestApplyExactlyOnceWhenBackendsAreTerminated(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t) // its own: pg_terminate_backend reaches every database's clients
	w := generate(rand.New(rand.NewPCG(11, 12)), 3, 12, 1500)
	var strikes, terminated int
	var faultErr error
	p := shipAll(t, srv.URL(), w, func(ctx context.Context, p *progress) {
		rng := rand.New(rand.NewPCG(13, 14))
		for at := 0; ; at += 2 + rng.IntN(5) {
			if !p.await(ctx, func(shipped, _ int) bool { return shipped >= at }) {
				return
			}
			n, err := terminateMidApply(ctx, srv, []string{"minutes", "days"}[rng.IntN(2)])
			if err != nil {
				if ctx.Err() == nil {
					faultErr = err
				}
				return
			}
			strikes++
			terminated += n
		}
	})
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	shipped, retries, dups := p.counts()
	t.Logf("%d strikes terminated %d backends; %d batches shipped, %d applies retried, %d acknowledged as duplicates",
		strikes, terminated, shipped, retries, dups)
	if strikes == 0 || retries < strikes {
		t.Errorf("%d strikes, %d applies retried: want a retry for each strike at least", strikes, retries)
	}
	checkShipped(t, open(t, srv.URL(), "reader", time.Unix(t0+3600, 0)), w)
}

// terminateMidApply locks table, which every Apply writes to, waits until
// an Apply waits for the lock, inside its transaction, and then terminates
// every client backend (the lock's holder among them, which frees it). It
// returns how many it terminated. Without the lock a termination may find
// every connection idle between two applies, where the pool may replace it
// unseen, and no Apply fails.
func terminateMidApply(ctx context.Context, srv *pgtest.Server, table string) (int, error) {
	lock, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		return 0, err
	}
	defer lock.Close(context.WithoutCancel(ctx))
	if _, err := lock.Exec(ctx, "BEGIN; LOCK TABLE logtally."+table+" IN EXCLUSIVE MODE"); err != nil {
		return 0, err
	}
	// pg_stat_activity holds still for the length of a transaction, so
	// another connection watches it.
	watch, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		return 0, err
	}
	defer watch.Close(context.WithoutCancel(ctx))
	tick := time.NewTicker(2 * time.Millisecond) // PostgreSQL tells no one that a backend waits
	defer tick.Stop()
	for {
		var waiting bool
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid)))`,
			lock.PgConn().PID()).Scan(&waiting)
		if err != nil {
			return 0, err
		}
		if waiting {
			break
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-tick.C:
		}
	}
	return srv.TerminateOthers(ctx)
}

// TestApplyExactlyOnceAcrossImmediateStop stops PostgreSQL as a crash
// would (-m immediate) while three nodes ship, then starts it again on the
// same data and port once they have failed: the nodes retry, and every
// batch counts exactly once.
func TestApplyExactlyOnceAcrossImmediateStop(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t) // its own: the test stops it
	w := generate(rand.New(rand.NewPCG(21, 22)), 3, 12, 1500)
	total := 3 * 12
	var stops int
	p := shipAll(t, srv.URL(), w, func(ctx context.Context, p *progress) {
		// Stop twice: after a third and after two thirds of the batches.
		for _, at := range []int{total / 3, 2 * total / 3} {
			if !p.await(ctx, func(shipped, _ int) bool { return shipped >= at }) {
				return
			}
			_, before, _ := p.counts()
			srv.StopImmediate()
			stops++
			// Down until a shipper has failed on it; shipping cannot end
			// meanwhile, since a third of the batches is still to ship.
			p.await(ctx, func(_, retries int) bool { return retries > before })
			srv.Restart()
		}
	})
	shipped, retries, dups := p.counts()
	t.Logf("%d immediate stops; %d batches shipped, %d applies retried, %d acknowledged as duplicates", stops, shipped, retries, dups)
	if stops != 2 || retries < 2 {
		t.Errorf("%d stops, %d retries: the fault was not injected", stops, retries)
	}
	checkShipped(t, open(t, srv.URL(), "reader", time.Unix(t0+3600, 0)), w)
}

// TestApplyLostCommitReplyIsDuplicate loses the reply to a COMMIT on the
// wire (a proxy forwards it and cuts the client): Apply fails, yet the
// batch was applied, and sending it again is acknowledged as a duplicate.
func TestApplyLostCommitReplyIsDuplicate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	node := nodeName(0)
	proxy := pgtest.NewProxy(t, pgtest.Database(t))
	s := open(t, proxy.URL(), node, time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(31, 32)), 1, 4, 300)
	lost := 0
	for i, b := range w.batches[0] {
		seq := uint64(i + 1)
		if i == 1 || i == 3 {
			lost++
			proxy.LoseCommitReplies(1)
			if applied, err := apply(ctx, s, node, seq, b); err == nil {
				t.Fatalf("Apply %d with its reply lost = %v, nil; want an error", seq, applied)
			}
			// The retry waits for the cursor's lock, which the lost
			// transaction holds until its COMMIT is done: it then finds the
			// batch applied.
			if applied, err := apply(ctx, s, node, seq, b); applied || err != nil {
				t.Fatalf("Apply %d again = %v, %v; want false, nil (a duplicate)", seq, applied, err)
			}
			// The proxy counts the reply lost once it has read it all,
			// which may be after Apply has returned.
			if err := proxy.AwaitLost(ctx, lost); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if applied, err := apply(ctx, s, node, seq, b); !applied || err != nil {
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
	t.Parallel()
	url := pgtest.Database(t)
	ctx := testContext(t)
	node := nodeName(0)
	w := generate(rand.New(rand.NewPCG(41, 42)), 1, 3, 300)
	s := open(t, url, node, time.Unix(t0+3600, 0))
	for i, b := range w.batches[0] {
		if applied, err := apply(ctx, s, node, uint64(i+1), b); !applied || err != nil {
			t.Fatalf("Apply %d = %v, %v", i+1, applied, err)
		}
	}
	// A new process of the same node, whose outbox still holds batch 3.
	again := open(t, url, node, time.Unix(t0+3600, 0))
	if applied, err := apply(ctx, again, node, 3, w.batches[0][2]); applied || err != nil {
		t.Errorf("Apply 3 again = %v, %v; want false, nil", applied, err)
	}
	checkShipped(t, again, w)
}
