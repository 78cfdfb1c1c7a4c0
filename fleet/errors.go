package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/logtally/logtally/tally"
)

// blockedRetry is how long a blocked node (StateBlocked) waits between two
// attempts: an error that retrying cannot mend until someone acts (a wrong
// password, a missing database or privilege, a batch PostgreSQL refuses)
// is not retried blind, and yet a fix is picked up without a restart.
const blockedRetry = time.Minute

// BlockedError is an error of the fleet database, or of a batch, that
// blocks shipping until someone acts: Fix says what to do.
type BlockedError struct {
	Err  error
	Code string // the SQLSTATE, if PostgreSQL gave one
	Fix  string
}

func (e *BlockedError) Error() string { return fmt.Sprintf("%v; to fix: %s", e.Err, e.Fix) }

func (e *BlockedError) Unwrap() error { return e.Err }

// permanent maps a SQLSTATE, or its class (the first two characters), to
// the fix of an error that retrying cannot mend. %[1]s is the role and
// %[2]s the database of the connection, where they are known. Every code
// of a class not here (connection exceptions 08, transaction rollbacks 40
// such as a serialization failure or a deadlock, insufficient resources
// 53, an administrator's shutdown or cancel 57, system errors 58, ...) is
// transient, and retried with backoff.
var permanent = map[string]string{
	"28":    "check the role (%[1]s) and its password in the --fleet URL, and that pg_hba.conf lets it connect",
	"3D":    "create the database: createdb -O %[1]s %[2]s, or name an existing one in the --fleet URL",
	"42501": "GRANT the role %[1]s what logtally needs: GRANT CREATE ON DATABASE %[2]s TO %[1]s, or make it the owner of schema logtally and its tables",
	"42":    "the fleet database's schema logtally was changed outside logtally: restore it from a backup, or drop it to have it made anew",
	"3F":    "the fleet database's schema logtally was dropped: restore it from a backup, or restart the nodes to have it made anew",
	"22":    "a batch holds a value PostgreSQL refuses; it stays in the outbox: report it with this error",
	"23":    "a batch breaks a constraint of the fleet schema; it stays in the outbox: report it with this error",
	"54":    "a batch holds a value over a limit of PostgreSQL (a path too long for an index); it stays in the outbox: report it with this error",
	"0A":    "the PostgreSQL server lacks a feature logtally needs: use PostgreSQL 13 or newer",
}

// blockedBy returns err as a BlockedError if retrying cannot mend it, or
// nil if it is transient (a lost connection, a timeout, a server that
// restarts): what to retry with backoff. url is the fleet database's, whose
// role and database a fix names.
func blockedBy(err error, url string) *BlockedError {
	var b *BlockedError
	if errors.As(err, &b) {
		return b
	}
	switch {
	case errors.Is(err, tally.ErrBadBatch):
		return &BlockedError{Err: err, Fix: "the outbox entry cannot be decoded (the local database is damaged): report it with this error"}
	case errors.Is(err, ErrSchema):
		return &BlockedError{Err: err, Fix: "upgrade logtally on this node to the version of the nodes that upgraded the fleet database"}
	}
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || len(pg.Code) != 5 {
		return nil
	}
	fix, ok := permanent[pg.Code]
	if !ok {
		if fix, ok = permanent[pg.Code[:2]]; !ok {
			return nil
		}
	}
	role, db := "ROLE", "DATABASE"
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && ce.Config != nil {
		role, db = ce.Config.User, ce.Config.Database
	} else if c, err := pgconn.ParseConfig(url); err == nil && url != "" {
		role, db = c.User, c.Database
	}
	return &BlockedError{Err: err, Code: pg.Code, Fix: fmt.Sprintf(fix, role, db)}
}

// retry records a failed attempt and waits before the next one: with
// backoff for a transient error, in state; for one that blocks (see
// blockedBy) in StateBlocked, logged once at ERROR with its fix (again only
// when the error changes), for blockedRetry. It reports whether ctx is
// still live.
func (n *Node) retry(ctx context.Context, state string, err error, backoff *time.Duration) bool {
	b := blockedBy(err, n.cfg.URL)
	if b == nil {
		n.failed(state, err)
		return sleep(ctx, backoff)
	}
	n.failed(StateBlocked, b)
	if key := blockKey(b); key != n.blocked {
		n.blocked = key
		n.log.Error("fleet: shipping blocked until this is fixed; counting locally, the outbox keeps the batches, trying again every "+
			n.blockedRetry.String(), "sqlstate", b.Code, "fix", b.Fix, "err", b.Err)
	}
	*backoff = minBackoff
	wait := n.blockedRetry
	return sleep(ctx, &wait)
}

// blockKey tells two blocking errors apart for the log: by SQLSTATE and
// PostgreSQL's message, which do not change from one attempt to the next
// as the whole text may.
func blockKey(b *BlockedError) string {
	var pg *pgconn.PgError
	if errors.As(b.Err, &pg) {
		return pg.Code + " " + pg.Message
	}
	return b.Err.Error()
}

// transient reports whether err may be mended by trying again: it is
// neither a refusal of this node (a name another database holds, a fleet
// it is behind or ahead of, a newer schema) nor an error that blocks.
func transient(err error, url string) bool {
	for _, refusal := range []error{ErrNameTaken, ErrBehind, ErrFleetBehind, ErrGap, ErrSchema, ErrOtherSecret} {
		if errors.Is(err, refusal) {
			return false
		}
	}
	return blockedBy(err, url) == nil
}
