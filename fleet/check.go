package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// startCheckTimeout is how long Check tries to reach the fleet database
// when it need not wait: a node whose database cannot be reached at once
// counts locally, and shipping checks the same things when it connects.
const startCheckTimeout = 3 * time.Second

// loadIdent reads the database's identity into n.ident, made on its first
// start in fleet mode. It is idempotent.
func (n *Node) loadIdent() error {
	if n.ident.ID != ([16]byte{}) {
		return nil
	}
	id, err := n.outbox.NodeID()
	if err != nil {
		return fmt.Errorf("fleet: node identity: %w", err)
	}
	n.ident = Ident{ID: id, Name: n.cfg.Node}
	return nil
}

// Check makes sure, before the node reads any log, that its database may
// ship to the fleet: it registers the node, refusing a name that another
// database holds (ErrNameTaken) unless Config.TakeOver, and rebases a
// database that is behind the fleet (ErrBehind: restored from a backup,
// copied from another machine, or taking another's place) on the fleet's
// cursor and read positions, so that the fleet counts every line once.
//
// With wait (and always with Config.TakeOver) it waits for the fleet
// database; without, a database it cannot reach within
// startCheckTimeout is left to shipping, which checks the same when it
// connects and stops on what only a start can mend.
func (n *Node) Check(ctx context.Context, wait bool) error {
	if err := n.loadIdent(); err != nil {
		return err
	}
	st := n.store.Load()
	if st == nil {
		var err error
		if st, err = n.reach(ctx, wait || n.cfg.TakeOver); st == nil {
			return err
		}
		n.store.Store(st)
	}
	if err := n.checkSecret(st); err != nil {
		return err
	}
	node, c, err := st.Register(ctx, n.ident, n.cfg.TakeOver)
	if err != nil {
		if !wait && !n.cfg.TakeOver && transient(err, n.cfg.URL) {
			// Lost between connecting and registering (a restart of the
			// fleet database): as if it had not been reached.
			n.log.Info("fleet: lost at start; counting locally, shipping checks the node when it connects", "err", err)
			return nil
		}
		return err
	}
	if node.ID != n.ident.ID {
		if err := n.outbox.SetNodeID(node.ID); err != nil {
			return fmt.Errorf("fleet: take over identity: %w", err)
		}
		n.ident = node
	}
	err = n.verify(c)
	if errors.Is(err, ErrBehind) {
		return n.rebase(ctx, st, c)
	}
	return err
}

// reach connects to the fleet database: waiting for it if wait, otherwise
// trying for startCheckTimeout and returning nil, nil if it cannot.
func (n *Node) reach(ctx context.Context, wait bool) (*Store, error) {
	if wait {
		return n.connect(ctx)
	}
	cctx, cancel := context.WithTimeout(ctx, startCheckTimeout)
	defer cancel()
	st, err := Open(cctx, n.cfg, n.log)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		n.log.Info("fleet: not reachable at start; counting locally, shipping checks the node when it connects", "err", err)
		return nil, nil
	}
	st.Now = n.now
	return st, nil
}

// verify checks the fleet's cursor c for this node against the outbox: the
// fleet's last batch of the node must be the database's batch of that
// number (by checksum), and the outbox's first entry at most the cursor's
// next. A database that holds another batch under that number, or none, is
// behind the fleet (ErrBehind); a fleet cursor below what the fleet
// acknowledged is a fleet database restored from a backup (ErrFleetBehind).
func (n *Node) verify(c Cursor) error {
	acked, ackedSum, ok, err := n.outbox.Acked()
	if err != nil {
		return err
	}
	stats, err := n.outbox.Stats()
	if err != nil {
		return err
	}
	name := n.ident.Name
	if ok && c.Seq < acked {
		return fmt.Errorf("fleet: the fleet database holds node %q's batches up to %d but acknowledged %d before (restored from a backup?): "+
			"batches %d to %d are lost to it: %w", name, c.Seq, acked, c.Seq+1, acked, ErrFleetBehind)
	}
	behind := fmt.Errorf("fleet: the fleet applied node %q's batch %d, which this database does not hold (this database was restored "+
		"from a backup, copied, or replaces the one that shipped it): %w", name, c.Seq, ErrBehind)
	switch {
	case c.Seq == 0:
	case !c.HasSum: // a cursor from before checksums: numbers only
		if stats.LastSeq < c.Seq {
			return behind
		}
	case ok && c.Seq == acked:
		if ackedSum != c.Sum {
			return behind
		}
	default:
		e, found, err := n.outbox.Next(c.Seq - 1)
		if err != nil {
			return err
		}
		if !found || e.Seq != c.Seq || e.Sum() != c.Sum {
			return behind
		}
	}
	first, found, err := n.outbox.Next(0)
	if err != nil {
		return err
	}
	next := stats.LastSeq + 1
	if found {
		next = first.Seq
	}
	if next > c.Seq+1 {
		return fmt.Errorf("fleet: node %q's cursor is at %d and its next batch is %d: batches %d to %d are missing from the fleet database: %w",
			name, c.Seq, next, c.Seq+1, next-1, ErrGap)
	}
	return nil
}

// rebase makes the database, behind the fleet, go on from the fleet's
// cursor c and the fleet's read positions: the batches in its outbox are
// dropped (none is what the fleet applied under its number) and the lines
// after the fleet's positions are read, counted and shipped again.
func (n *Node) rebase(ctx context.Context, st *Store, c Cursor) error {
	pos, err := st.Positions(ctx, n.ident.ID)
	if err != nil {
		return err
	}
	dropped, err := n.outbox.Rebase(c.Seq, c.Sum, pos)
	if err != nil {
		return fmt.Errorf("fleet: rebase: %w", err)
	}
	n.log.Warn("fleet: this node's database is behind the fleet (restored from a backup, copied, or taking another's place): "+
		"reading on from the fleet's read positions", "node", n.ident.Name, "cursor", c.Seq, "dropped_batches", dropped,
		"files", len(pos), "note", "the fleet counts every line once; this node's own counts (scope=node) of lines it read "+
			"since its database was copied may count twice")
	return nil
}
