package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// Entry is one outbox entry as the fleet applies it: its number, its
// checksum and the checksum of the entry before it (zero for the first),
// and its batch.
type Entry struct {
	Seq         uint64
	Sum, Parent logtally.EntrySum
	Batch       *tally.Batch
}

// Apply adds entry e of node to the fleet's counts, exactly once: in one
// transaction it locks the node's cursor, checks e against it, adds the
// batch, moves the cursor to e (its number and checksum) and records the
// read positions the batch ends at.
//
// An entry at or below the cursor was applied before: Apply changes
// nothing and returns false, nil, and the caller treats the batch as
// shipped. One beyond the cursor's next is a gap: Apply returns an error
// wrapping ErrGap. The cursor's own entry must have the cursor's checksum,
// and the next must name it as its parent; otherwise the node's database is
// not the one that shipped the cursor's batch (ErrBehind). Any other error
// leaves the database as it was, and the same entry may be sent again: it
// may have been applied if the error came after COMMIT was sent, which the
// cursor then tells. The node must be registered (Register).
//
// The batch is sent as a few statements over arrays, in one round trip, so
// a 50,000-line batch costs about as many round trips as a small one.
// Apply does not change the batch.
func (s *Store) Apply(ctx context.Context, node Ident, e Entry) (applied bool, err error) {
	if node.Name == "" {
		return false, errors.New("fleet: apply: no node name")
	}
	if e.Seq == 0 || e.Seq > math.MaxInt64 {
		return false, fmt.Errorf("fleet: apply: batch number %d out of range", e.Seq)
	}
	p := s.prepare(e.Batch, s.Now())
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: %w", node.Name, e.Seq, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if fresh, err := lockCursor(ctx, tx, node, e); err != nil || !fresh {
		return false, err
	}
	q := p.statements(e.Batch.Site(), node.Name)
	moveCursor(q, node, e)
	if err := tx.SendBatch(ctx, q).Close(); err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: %w", node.Name, e.Seq, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: commit: %w", node.Name, e.Seq, err)
	}
	s.countFuture(p.future)
	return true, nil
}

// lockCursor locks node's cursor in tx and checks e against it: it
// reports whether e is the next entry to apply, false for one applied
// before, and an error for a gap or another database's entry.
func lockCursor(ctx context.Context, tx pgx.Tx, node Ident, e Entry) (fresh bool, err error) {
	var last int64
	var sum []byte
	err = tx.QueryRow(ctx, "SELECT last_seq, last_sum FROM logtally.nodes WHERE id = $1 FOR UPDATE", node.ID).Scan(&last, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("fleet: apply %s/%d: the node is not registered", node.Name, e.Seq)
	}
	if err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: cursor: %w", node.Name, e.Seq, err)
	}
	known := len(sum) == len(e.Sum)
	switch seq := int64(e.Seq); {
	case seq == last && known && string(sum) != string(e.Sum[:]):
		return false, fmt.Errorf("fleet: apply %s/%d: the fleet applied another batch under this number: %w", node.Name, e.Seq, ErrBehind)
	case seq <= last:
		return false, nil
	case seq > last+1:
		return false, fmt.Errorf("fleet: apply %s/%d: cursor at %d: %w", node.Name, e.Seq, last, ErrGap)
	case known && string(sum) != string(e.Parent[:]):
		return false, fmt.Errorf("fleet: apply %s/%d: it follows another batch than the fleet's %d: %w", node.Name, e.Seq, last, ErrBehind)
	}
	return true, nil
}

// moveCursor queues the statements that move node's cursor to e and record
// the read positions e's batch ends at.
func moveCursor(q *pgx.Batch, node Ident, e Entry) {
	q.Queue("UPDATE logtally.nodes SET last_seq = $2, last_sum = $3, seen_at = now() WHERE id = $1",
		node.ID, int64(e.Seq), e.Sum[:])
	pos := e.Batch.Positions()
	if len(pos) == 0 {
		return
	}
	files := slices.Sorted(maps.Keys(pos))
	offsets := make([]int64, len(files))
	for i, f := range files {
		offsets[i] = pos[f]
	}
	q.Queue(`INSERT INTO logtally.node_positions AS t (node, file, position)
		SELECT $1, u.* FROM unnest($2::text[], $3::int8[]) AS u
		ON CONFLICT (node, file) DO UPDATE SET position = EXCLUDED.position`, node.ID, files, offsets)
}

// Statements, in the order Apply runs them. Per-node rows first, then the
// rows nodes share, each table's rows in key order, so that concurrent
// nodes take locks in one order.
const (
	upsertCounts = `INSERT INTO logtally.%[1]s AS t (site, node, %[2]s, requests, pageviews, bytes, rejected,
		status_1xx, status_2xx, status_3xx, status_4xx, status_5xx, approximate)
	SELECT $1, $2, u.* FROM unnest($3::%[3]s[], $4::int8[], $5::int8[], $6::int8[], $7::int8[],
		$8::int8[], $9::int8[], $10::int8[], $11::int8[], $12::int8[], $13::bool[]) AS u
	ON CONFLICT (site, %[2]s, node) DO UPDATE SET
		requests = t.requests + EXCLUDED.requests, pageviews = t.pageviews + EXCLUDED.pageviews,
		bytes = t.bytes + EXCLUDED.bytes, rejected = t.rejected + EXCLUDED.rejected,
		status_1xx = t.status_1xx + EXCLUDED.status_1xx, status_2xx = t.status_2xx + EXCLUDED.status_2xx,
		status_3xx = t.status_3xx + EXCLUDED.status_3xx, status_4xx = t.status_4xx + EXCLUDED.status_4xx,
		status_5xx = t.status_5xx + EXCLUDED.status_5xx, approximate = t.approximate OR EXCLUDED.approximate`

	upsertSeconds = `INSERT INTO logtally.seconds AS t (site, node, second, requests, pageviews, rejected)
	SELECT $1, $2, u.* FROM unnest($3::timestamptz[], $4::int8[], $5::int8[], $6::int8[]) AS u
	ON CONFLICT (site, second, node) DO UPDATE SET
		requests = t.requests + EXCLUDED.requests, pageviews = t.pageviews + EXCLUDED.pageviews,
		rejected = t.rejected + EXCLUDED.rejected`

	// The visitors a node is the first to add to a bucket's set are added
	// to its own row's count.
	addVisitors = `WITH added AS (
		INSERT INTO logtally.%[1]s_visitors (site, %[2]s, visitor)
		SELECT $1, u.k, u.v FROM unnest($3::%[3]s[], $4::int8[]) AS u(k, v)
		ON CONFLICT DO NOTHING
		RETURNING %[2]s AS k)
	UPDATE logtally.%[1]ss AS t SET visitors = t.visitors + a.n
	FROM (SELECT k, count(*) AS n FROM added GROUP BY k) AS a
	WHERE t.site = $1 AND t.node = $2 AND t.%[2]s = a.k`

	upsertLastSeen = `INSERT INTO logtally.visitors AS t (site, visitor, last_seen)
	SELECT $1, u.* FROM unnest($2::int8[], $3::timestamptz[]) AS u
	ON CONFLICT (site, visitor) DO UPDATE SET last_seen = EXCLUDED.last_seen
	WHERE t.last_seen < EXCLUDED.last_seen`

	upsertPaths = `INSERT INTO logtally.%[1]s AS t (site, %[2]s, path, pageviews)
	SELECT $1, u.* FROM unnest($2::%[3]s[], $3::text[], $4::int8[]) AS u
	ON CONFLICT (site, %[2]s, path) DO UPDATE SET pageviews = t.pageviews + EXCLUDED.pageviews`
)

var (
	upsertMinutes       = fmt.Sprintf(upsertCounts, "minutes", "minute", "timestamptz")
	upsertHours         = fmt.Sprintf(upsertCounts, "hours", "hour", "timestamptz")
	upsertDays          = fmt.Sprintf(upsertCounts, "days", "day", "date")
	addMinuteVisitors   = fmt.Sprintf(addVisitors, "minute", "minute", "timestamptz")
	addHourVisitors     = fmt.Sprintf(addVisitors, "hour", "hour", "timestamptz")
	addDayVisitors      = fmt.Sprintf(addVisitors, "day", "day", "date")
	upsertSecondPaths   = fmt.Sprintf(upsertPaths, "second_paths", "second", "timestamptz")
	upsertWindowMinutes = fmt.Sprintf(upsertPaths, "window_minute_paths", "minute", "timestamptz")
	upsertDayPaths      = fmt.Sprintf(upsertPaths, "day_paths", "day", "date")
)

// statements returns the batch of statements that adds p to site's counts,
// node's rows where counts are kept per node. Empty tables are skipped.
func (p *payload) statements(site, node string) *pgx.Batch {
	q := &pgx.Batch{}
	counts := func(sql string, r *countRows) {
		if len(r.keys) == 0 {
			return
		}
		q.Queue(sql, site, node, r.keys, r.cols[0], r.cols[1], r.cols[2], r.cols[3],
			r.cols[4], r.cols[5], r.cols[6], r.cols[7], r.cols[8], r.approximate)
	}
	counts(upsertMinutes, &p.minutes)
	counts(upsertHours, &p.hours)
	counts(upsertDays, &p.days)
	if len(p.seconds.keys) > 0 {
		q.Queue(upsertSeconds, site, node, p.seconds.keys, p.seconds.cols[0], p.seconds.cols[1], p.seconds.cols[3])
	}
	for _, v := range []struct {
		sql string
		set *pairs
	}{{addMinuteVisitors, &p.minuteVisitors}, {addHourVisitors, &p.hourVisitors}, {addDayVisitors, &p.dayVisitors}} {
		if len(v.set.keys) > 0 {
			q.Queue(v.sql, site, node, v.set.keys, v.set.visitors)
		}
	}
	if len(p.lastSeen.keys) > 0 {
		q.Queue(upsertLastSeen, site, p.lastSeen.visitors, p.lastSeen.keys)
	}
	for _, v := range []struct {
		sql  string
		rows *pathRows
	}{{upsertSecondPaths, &p.secondPaths}, {upsertWindowMinutes, &p.windowMinutePaths}, {upsertDayPaths, &p.dayPaths}} {
		if len(v.rows.keys) > 0 {
			q.Queue(v.sql, site, v.rows.keys, v.rows.paths, v.rows.views)
		}
	}
	return q
}
