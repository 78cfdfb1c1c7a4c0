package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// Apply adds batch seq of node to the fleet's counts, exactly once: in one
// transaction it locks the node's cursor, checks seq against it, adds the
// batch and moves the cursor to seq.
//
// A seq at or below the cursor was applied before: Apply changes nothing
// and returns false, nil, and the caller treats the batch as shipped. A seq
// beyond the cursor's next is a gap: Apply returns an error wrapping ErrGap.
// Any other error leaves the database as it was, and the same batch may be
// sent again: it may have been applied if the error came after COMMIT was
// sent, which the cursor then tells.
//
// The batch is sent as a few statements over arrays, in one round trip, so
// a 50,000-line batch costs about as many round trips as a small one.
// Apply does not change b.
func (s *Store) Apply(ctx context.Context, node string, seq uint64, b *tally.Batch) (applied bool, err error) {
	if node == "" {
		return false, errors.New("fleet: apply: no node name")
	}
	if seq == 0 || seq > math.MaxInt64 {
		return false, fmt.Errorf("fleet: apply: batch number %d out of range", seq)
	}
	// A node's outbox numbers the batches of all its sites in one
	// sequence, so its one cursor is kept under DefaultSite; the counts go
	// to the batch's own site.
	site, cursorSite := b.Site(), logtally.DefaultSite
	p := s.prepare(b, s.Now())

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: %w", node, seq, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	cur := &pgx.Batch{}
	cur.Queue("INSERT INTO logtally.cursors (site, node, last_seq) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING", cursorSite, node)
	var last int64
	cur.Queue("SELECT last_seq FROM logtally.cursors WHERE site = $1 AND node = $2 FOR UPDATE", cursorSite, node).
		QueryRow(func(row pgx.Row) error { return row.Scan(&last) })
	if err := tx.SendBatch(ctx, cur).Close(); err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: cursor: %w", node, seq, err)
	}
	switch {
	case int64(seq) <= last:
		return false, nil
	case int64(seq) > last+1:
		return false, fmt.Errorf("fleet: apply %s/%d: cursor at %d: %w", node, seq, last, ErrGap)
	}
	if err := tx.SendBatch(ctx, p.statements(site, node, int64(seq))).Close(); err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: %w", node, seq, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("fleet: apply %s/%d: commit: %w", node, seq, err)
	}
	return true, nil
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

	moveCursor = `UPDATE logtally.cursors SET last_seq = $3, updated_at = now() WHERE site = $1 AND node = $2`
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

// statements returns the batch of statements that adds p and moves the
// cursor to seq. Empty tables are skipped.
func (p *payload) statements(site, node string, seq int64) *pgx.Batch {
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
	q.Queue(moveCursor, logtally.DefaultSite, node, seq) // the node's one cursor: see Apply
	return q
}
