package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/logtally/logtally"
)

// A node is its local database, not its name. The database's first start
// in fleet mode makes it an identity (storage.Outbox.NodeID); the node
// registers it with its name, and a name is held by one identity at a
// time (logtally.nodes, schema/2_nodes.sql). So two databases shipping
// under one name are refused whatever the timing, and a database behind
// the fleet (restored from a backup, copied) is told by the checksums of
// the batches: the cursor keeps the sum of the last batch applied, and
// every batch names the sum of the one before it.

var (
	// ErrNameTaken means another database ships under this node's name:
	// two machines given one --node, or a database replaced by a new one.
	// Its batches would mix with the other's, so the node is refused.
	ErrNameTaken = errors.New("node name held by another database")
	// ErrBehind means this node's database is behind the fleet: under the
	// number of the fleet's last batch of this node it holds another batch,
	// or none (restored from a backup, copied from another machine). Its
	// batches would be taken for duplicates or count lines twice, so the
	// node takes the fleet's read positions at its next start (Node.Check).
	ErrBehind = errors.New("this node's database is behind the fleet")
	// ErrFleetBehind means the fleet database holds fewer of this node's
	// batches than it acknowledged (restored from a backup): the batches
	// in between are lost to the fleet, so shipping stops.
	ErrFleetBehind = errors.New("fleet database is behind this node")
)

// Ident is a node as the fleet knows it: its database's identity and its
// name, the label of its rows in the count tables.
type Ident struct {
	ID   [16]byte
	Name string
}

// Cursor is where the fleet stands for a node: the number of its last
// batch applied and that batch's checksum. HasSum is false when the sum is
// not known (a cursor from before schema version 2) or no batch was applied.
type Cursor struct {
	Seq    uint64
	Sum    logtally.EntrySum
	HasSum bool
}

// registerLock is the advisory lock under which nodes register, so that
// two nodes registering one name at once are told apart in order.
const registerLock = schemaLock + 2

// Register registers node's identity under its name and returns the
// node's cursor. A name held by another identity is refused with
// ErrNameTaken, unless takeOver: then the node takes that identity's place
// and Register returns the identity it must keep from now on (its database
// then is behind the fleet: see Node.Check). A node whose name changed
// keeps its identity, cursor and positions under the new name. A name with
// a cursor from before schema version 2 (logtally.cursors) takes it over.
func (s *Store) Register(ctx context.Context, node Ident, takeOver bool) (Ident, Cursor, error) {
	var c Cursor
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(registerLock)); err != nil {
			return err
		}
		var holder [16]byte
		var at time.Time
		err := tx.QueryRow(ctx, "SELECT id, seen_at FROM logtally.nodes WHERE name = $1", node.Name).Scan(&holder, &at)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if err := s.claimName(ctx, tx, node); err != nil {
				return err
			}
		case err != nil:
			return err
		case holder != node.ID && !takeOver:
			return fmt.Errorf("%w: %q is registered to database %x, which last shipped at %s; "+
				"give this node another --node, or if this database replaces that one, start it once with --fleet-take-over",
				ErrNameTaken, node.Name, holder[:4], at.UTC().Format(time.RFC3339))
		case holder != node.ID:
			s.log.Warn("fleet: taking over the place of another database", "node", node.Name, "from", fmt.Sprintf("%x", holder[:4]))
			node.ID = holder
		}
		_, err = tx.Exec(ctx, `UPDATE logtally.nodes SET window_seconds = $2, max_skew_seconds = $3, seen_at = now()
			WHERE id = $1`, node.ID, int64(s.cfg.Window/time.Second), int64(s.cfg.MaxSkew/time.Second))
		if err != nil {
			return err
		}
		c, err = cursorOf(ctx, tx, node.ID)
		return err
	})
	if err != nil {
		return node, c, fmt.Errorf("fleet: register node %q: %w", node.Name, err)
	}
	return node, c, nil
}

// claimName gives node's identity its name: renamed if the identity is
// registered under another, registered anew otherwise (taking over a
// cursor of the name from before schema version 2).
func (s *Store) claimName(ctx context.Context, tx pgx.Tx, node Ident) error {
	tag, err := tx.Exec(ctx, "UPDATE logtally.nodes SET name = $2 WHERE id = $1", node.ID, node.Name)
	if err != nil || tag.RowsAffected() > 0 {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO logtally.nodes (id, name, last_seq)
		VALUES ($1, $2, coalesce((SELECT last_seq FROM logtally.cursors WHERE site = $3 AND node = $2), 0))`,
		node.ID, node.Name, logtally.DefaultSite)
	return err
}

// cursorOf reads the cursor of the node with identity id in tx.
func cursorOf(ctx context.Context, tx pgx.Tx, id [16]byte) (Cursor, error) {
	var c Cursor
	var last int64
	var sum []byte
	if err := tx.QueryRow(ctx, "SELECT last_seq, last_sum FROM logtally.nodes WHERE id = $1", id).Scan(&last, &sum); err != nil {
		return c, err
	}
	c.Seq = uint64(last)
	if len(sum) == len(c.Sum) {
		copy(c.Sum[:], sum)
		c.HasSum = true
	}
	return c, nil
}

// Positions returns how far the node with identity id had read each of its
// files as of its last batch applied: file identity to offset.
func (s *Store) Positions(ctx context.Context, id [16]byte) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, "SELECT file, position FROM logtally.node_positions WHERE node = $1", id)
	if err != nil {
		return nil, fmt.Errorf("fleet: positions: %w", err)
	}
	out := map[string]int64{}
	var file string
	var pos int64
	_, err = pgx.ForEachRow(rows, []any{&file, &pos}, func() error {
		out[file] = pos
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: positions: %w", err)
	}
	return out, nil
}
