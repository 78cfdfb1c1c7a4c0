package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// shipment is the state of a Node's shipping to one Store.
type shipment struct {
	n        *Node
	st       *Store
	node     Ident             // as registered
	acked    uint64            // the last entry the fleet acknowledged
	ackedSum logtally.EntrySum // its checksum: the parent of the next
	deleted  uint64            // entries up to this are deleted from the outbox
	failing  bool              // the last attempt failed
}

// ship sends the outbox to st in number order, what waits together in one
// transaction (gatherEntries), until ctx is done or an error that retrying
// cannot mend (a gap, a reused node name) stops it. Any other error is retried on the same batch: with
// backoff, or if it blocks (blockedBy) only every blockedRetry. Apply's
// cursor tells a batch applied before from a new one, so a re-sent batch
// is counted once.
func (n *Node) ship(ctx context.Context, st *Store) {
	sh := &shipment{n: n, st: st}
	defer sh.flush()
	backoff := minBackoff
	synced := false
	resynced := false // since the last success: see the ErrGap case
	for ctx.Err() == nil {
		var err error
		if !synced {
			err = sh.resync(ctx)
			synced = err == nil
		} else {
			err = sh.next(ctx)
		}
		switch {
		case err == nil:
			backoff, resynced = minBackoff, false
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrGap) && synced && !resynced:
			// The cursor is behind what the fleet acknowledged: a crash of
			// the fleet database lost commits it had not yet made durable.
			// The outbox keeps those entries until Fence: read the cursor
			// again and send them anew.
			n.log.Warn("fleet: the fleet database lost batches it had acknowledged but not yet written (a crash?): sending them again",
				"err", err, "acked", sh.acked)
			synced, resynced = false, true
		case errors.Is(err, ErrGap) || errors.Is(err, ErrNameTaken) || errors.Is(err, ErrBehind) || errors.Is(err, ErrFleetBehind):
			n.stop(err)
			return
		default:
			sh.failed(err)
			if !n.retry(ctx, StateRetrying, err, &backoff) {
				return
			}
		}
	}
}

// resync registers the node and checks its cursor against the outbox
// (see Node.verify): entries at or below it were applied although their
// acknowledgement was lost (a crash, a lost reply), and are deleted; the
// first entry must be the cursor's next.
func (sh *shipment) resync(ctx context.Context) error {
	n := sh.n
	qctx, cancel := context.WithTimeout(ctx, applyTimeout)
	node, c, err := sh.st.Register(qctx, n.ident, false)
	cancel()
	if err != nil {
		return err
	}
	if err := n.verify(c); err != nil {
		if errors.Is(err, ErrBehind) {
			err = fmt.Errorf("%w; restart logtally while the fleet database is reachable: it then takes the fleet's read positions", err)
		}
		return err
	}
	dups, err := n.outbox.Delete(c.Seq, c.Sum)
	if err != nil {
		return err
	}
	n.status.duplicates.Add(int64(dups))
	sh.node, sh.acked, sh.ackedSum, sh.deleted = node, c.Seq, c.Sum, c.Seq
	n.status.acked.Store(c.Seq)
	sh.recovered()
	return nil
}

// next ships the entries waiting, several in one transaction (see
// gatherEntries), or when there are none deletes what was acknowledged and
// waits for a commit to add one.
func (sh *shipment) next(ctx context.Context) error {
	n := sh.n
	es, err := sh.gatherEntries()
	if err != nil {
		return err
	}
	if len(es) == 0 {
		if err := sh.flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-n.outbox.Written():
		}
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, applyTimeout)
	applied, err := sh.st.applyEntries(actx, sh.node, es, true)
	cancel()
	if err != nil {
		return err
	}
	last := es[len(es)-1]
	sh.acked, sh.ackedSum = last.Seq, last.Sum
	n.status.acked.Store(last.Seq)
	n.status.applied.Add(int64(applied))
	n.status.duplicates.Add(int64(len(es) - applied))
	sh.recovered()
	if sh.acked-sh.deleted >= deleteEvery {
		return sh.flush()
	}
	return nil
}

// Coalescing: a node that falls behind (a slow or unreachable fleet
// database, a burst) ships what waits in fewer, larger transactions, whose
// rows are summed per key, so that it catches up rather than falling
// further behind. One that keeps up ships each batch as it is committed.
const (
	maxCoalesce      = 64       // entries in one transaction
	maxCoalesceBytes = 32 << 20 // their encoded size, past the first
)

// gatherEntries returns the entries waiting after the last acknowledged,
// decoded, in number order, up to maxCoalesce of them and
// maxCoalesceBytes, each naming the one before as its parent.
func (sh *shipment) gatherEntries() ([]Entry, error) {
	var es []Entry
	after, parent, size := sh.acked, sh.ackedSum, 0
	for len(es) < maxCoalesce {
		e, ok, err := sh.n.outbox.Next(after)
		if err != nil {
			return nil, err
		}
		if !ok || (len(es) > 0 && size+len(e.Batch) > maxCoalesceBytes) {
			break
		}
		if e.Seq != after+1 {
			return nil, fmt.Errorf("fleet: outbox entry %d follows %d: %w", e.Seq, after, ErrGap)
		}
		b := &tally.Batch{}
		if err := b.UnmarshalBinary(e.Batch); err != nil {
			return nil, fmt.Errorf("fleet: outbox entry %d: %w", e.Seq, err)
		}
		sum := e.Sum()
		es = append(es, Entry{Seq: e.Seq, Sum: sum, Parent: parent, Batch: b})
		after, parent, size = e.Seq, sum, size+len(e.Batch)
	}
	return es, nil
}

// flush deletes the acknowledged entries from the outbox, once the fleet
// database has made them durable (Store.Fence): Apply commits without
// waiting for its disk, so an entry is kept until then.
func (sh *shipment) flush() error {
	if sh.deleted >= sh.acked {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), fenceTimeout)
	err := sh.st.Fence(ctx, sh.node, sh.acked)
	cancel()
	if err != nil {
		return err
	}
	if _, err := sh.n.outbox.Delete(sh.acked, sh.ackedSum); err != nil {
		return err
	}
	sh.deleted = sh.acked
	return nil
}

// failed notes a failure to retry (Node.retry records it); the first of a
// run is logged, unless it blocks, which retry logs.
func (sh *shipment) failed(err error) {
	if !sh.failing && blockedBy(err, sh.n.cfg.URL) == nil {
		sh.n.log.Warn("fleet: shipping failed; counting locally, the outbox keeps the batches, trying again",
			"err", err, "acked", sh.acked)
	}
	sh.failing = true
	sh.flush() // what was acknowledged need not be sent again; an error here is met again later
}

// recovered records a success, and logs the end of a run of failures.
func (sh *shipment) recovered() {
	if sh.failing {
		sh.n.log.Info("fleet: shipping again", "acked", sh.acked)
	}
	sh.failing = false
	sh.n.succeeded()
}
