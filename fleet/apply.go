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

// Apply adds entry e of node to the fleet's counts, exactly once: it is
// ApplyEntries of e alone, and reports whether e was applied now.
func (s *Store) Apply(ctx context.Context, node Ident, e Entry) (applied bool, err error) {
	n, err := s.ApplyEntries(ctx, node, []Entry{e})
	return n > 0, err
}

// ApplyEntries adds consecutive entries of node to the fleet's counts,
// exactly once, in one transaction: it locks the node's cursor, checks the
// entries against it, adds what the entries not applied before add (summed
// per row, so several seconds' batches cost about one's rows where they
// share keys), moves the cursor to the last entry (its number and
// checksum) and records the read positions it ends at. It returns how many
// entries it applied now.
//
// Entries at or below the cursor were applied before and are skipped; if
// all were, ApplyEntries changes nothing and returns 0, nil, and the caller
// treats them as shipped. A first entry beyond the cursor's next is a gap:
// an error wrapping ErrGap. The cursor's own entry must have the cursor's
// checksum, and the next must name it as its parent; otherwise the node's
// database is not the one that shipped the cursor's batch (ErrBehind). Any
// other error leaves the database as it was, and the same entries may be
// sent again: they may have been applied if the error came after COMMIT
// was sent, which the cursor then tells. The node must be registered
// (Register).
//
// The rows are sent as a few statements over arrays, in one round trip,
// so a 50,000-line batch costs about as many round trips as a small one.
// ApplyEntries does not change the batches. Its commit is durable when it
// returns; a Node's does not wait for that (see applyEntries).
func (s *Store) ApplyEntries(ctx context.Context, node Ident, es []Entry) (applied int, err error) {
	return s.applyEntries(ctx, node, es, false)
}

// applyEntries is ApplyEntries; if lazy, its commit does not wait for the
// fleet database's disk. That shortens the time the rows nodes share stay
// locked, by the fsync. A crash of the fleet database may then lose the
// commit, cursor and counts together: the caller keeps the entries until
// Fence says they are durable, and sends them again from the cursor.
func (s *Store) applyEntries(ctx context.Context, node Ident, es []Entry, lazy bool) (applied int, err error) {
	if node.Name == "" {
		return 0, errors.New("fleet: apply: no node name")
	}
	if err := checkRun(es); err != nil {
		return 0, err
	}
	first, last := es[0].Seq, es[len(es)-1].Seq
	defer func() {
		if err != nil {
			s.sent.forget(node.ID)
		}
	}()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("fleet: apply %s/%d-%d: %w", node.Name, first, last, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	es, err = lockCursor(ctx, tx, node, es)
	if err != nil || len(es) == 0 {
		return 0, err
	}
	q, sites := s.statements(es, node)
	moveCursor(q, node, es)
	if lazy {
		q.Queue("SET LOCAL synchronous_commit = off")
	}
	if err := tx.SendBatch(ctx, q).Close(); err != nil {
		return 0, fmt.Errorf("fleet: apply %s/%d-%d: %w", node.Name, es[0].Seq, last, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("fleet: apply %s/%d-%d: commit: %w", node.Name, es[0].Seq, last, err)
	}
	for site, p := range sites {
		s.sent.record(node.ID, site, p)
		s.countFuture(p.future)
	}
	return len(es), nil
}

// Fence returns once every commit of node's batches that applyEntries
// reported, through batch acked, is durable: a commit that waits for the
// disk makes durable all that was written to the log before it. A node
// deletes entries from its outbox only after it.
//
// The fleet database may have crashed between those commits and this one,
// losing them: a restarted server fences nothing of what its crash lost.
// So the same commit reads the node's cursor, and Fence fails, wrapping
// ErrGap, when it is short of acked: the node must send those batches
// again, and keep them until then.
//
// A failed Fence also drops what the Store remembers of the node's visitor
// sets (sentSets): it remembers the lost commits' visitors too, and would
// leave them out of the batches sent again, which no other commit may add.
// A fence is often the first to meet a crash, before any apply fails.
func (s *Store) Fence(ctx context.Context, node Ident, acked uint64) (err error) {
	defer func() {
		if err != nil {
			s.sent.forget(node.ID)
		}
	}()
	var last int64
	err = s.pool.QueryRow(ctx, "UPDATE logtally.nodes SET seen_at = now() WHERE id = $1 RETURNING last_seq", node.ID).Scan(&last)
	if err != nil {
		return fmt.Errorf("fleet: fence %s: %w", node.Name, err)
	}
	if uint64(last) < acked {
		return fmt.Errorf("fleet: fence %s: the fleet database holds its batches through %d, not the %d it acknowledged "+
			"(it lost commits in a crash): %w", node.Name, last, acked, ErrGap)
	}
	return nil
}

// checkRun checks that es is a run of consecutive entry numbers, each
// naming the one before as its parent.
func checkRun(es []Entry) error {
	if len(es) == 0 {
		return errors.New("fleet: apply: no entries")
	}
	for i, e := range es {
		if e.Seq == 0 || e.Seq > math.MaxInt64 {
			return fmt.Errorf("fleet: apply: batch number %d out of range", e.Seq)
		}
		if i > 0 && (e.Seq != es[i-1].Seq+1 || e.Parent != es[i-1].Sum) {
			return fmt.Errorf("fleet: apply: batch %d does not follow %d", e.Seq, es[i-1].Seq)
		}
	}
	return nil
}

// statements returns the statements that add es's batches to their
// sites' counts, node's rows where counts are kept per node, sites in
// order, and each site's payload.
func (s *Store) statements(es []Entry, node Ident) (*pgx.Batch, map[string]*payload) {
	bySite := map[string][]*tally.Batch{}
	for _, e := range es {
		bySite[e.Batch.Site()] = append(bySite[e.Batch.Site()], e.Batch)
	}
	q := &pgx.Batch{}
	now := s.Now()
	sites := make(map[string]*payload, len(bySite))
	for _, site := range slices.Sorted(maps.Keys(bySite)) {
		p := s.prepare(bySite[site], now, s.sent.known(node.ID, site))
		p.queue(q, site, node.Name)
		sites[site] = p
	}
	return q, sites
}

// lockCursor locks node's cursor in tx and checks es against it: it
// returns the entries to apply, those after the cursor, none if all were
// applied before, and an error for a gap or another database's entry.
func lockCursor(ctx context.Context, tx pgx.Tx, node Ident, es []Entry) ([]Entry, error) {
	var last int64
	var sum []byte
	first := es[0].Seq
	err := tx.QueryRow(ctx, "SELECT last_seq, last_sum FROM logtally.nodes WHERE id = $1 FOR UPDATE", node.ID).Scan(&last, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("fleet: apply %s/%d: the node is not registered", node.Name, first)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: apply %s/%d: cursor: %w", node.Name, first, err)
	}
	known := len(sum) == len(es[0].Sum)
	if int64(first) > last+1 {
		return nil, fmt.Errorf("fleet: apply %s/%d: cursor at %d: %w", node.Name, first, last, ErrGap)
	}
	if int64(first) <= last {
		i := last - int64(first) // the cursor's entry, if es holds it
		if i >= int64(len(es)) {
			return nil, nil
		}
		if known && string(sum) != string(es[i].Sum[:]) {
			return nil, fmt.Errorf("fleet: apply %s/%d: the fleet applied another batch under this number: %w", node.Name, es[i].Seq, ErrBehind)
		}
		return es[i+1:], nil
	}
	if known && string(sum) != string(es[0].Parent[:]) {
		return nil, fmt.Errorf("fleet: apply %s/%d: it follows another batch than the fleet's %d: %w", node.Name, first, last, ErrBehind)
	}
	return es, nil
}

// moveCursor queues the statements that move node's cursor to the last
// of es and record the read positions its batches end at.
func moveCursor(q *pgx.Batch, node Ident, es []Entry) {
	e := es[len(es)-1]
	q.Queue("UPDATE logtally.nodes SET last_seq = $2, last_sum = $3, seen_at = now() WHERE id = $1",
		node.ID, int64(e.Seq), e.Sum[:])
	pos := map[string]int64{}
	for _, e := range es {
		maps.Copy(pos, e.Batch.Positions())
	}
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

	// lockShared takes the site's lock on the rows that nodes share, held
	// to the end of the transaction. Nodes' batches add to the same rows
	// of the same seconds, so their transactions take turns there anyway:
	// in one wait on one lock, rather than a wait at every row another
	// transaction holds, each a sleep and a wake-up.
	lockShared = `SELECT pg_advisory_xact_lock(7813, hashtext($1))`

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
		WHERE NOT EXISTS (SELECT FROM logtally.%[1]s_visitors AS c WHERE c.site = $1 AND c.%[2]s = u.k AND c.visitor = u.v)
		ON CONFLICT DO NOTHING
		RETURNING %[2]s AS k)
	UPDATE logtally.%[1]ss AS t SET visitors = t.visitors + a.n
	FROM (SELECT k, count(*) AS n FROM added GROUP BY k) AS a
	WHERE t.site = $1 AND t.node = $2 AND t.%[2]s = a.k`

	// Each visitor's latest second is kept, whichever node saw it: a
	// visitor some node already gave this second or a later one is left
	// out before its row is locked, as on a busy site many nodes see the
	// same visitors in the same seconds.
	upsertLastSeen = `INSERT INTO logtally.visitors AS t (site, visitor, last_seen)
	SELECT $1, u.v, u.s FROM unnest($2::int8[], $3::timestamptz[]) AS u(v, s)
	WHERE NOT EXISTS (SELECT FROM logtally.visitors AS c WHERE c.site = $1 AND c.visitor = u.v AND c.last_seen >= u.s)
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
	// A day's page views are kept per node (schema 4): no two nodes add
	// to one row.
	upsertDayPaths = `INSERT INTO logtally.day_paths AS t (site, node, day, path, pageviews)
	SELECT $1, $2, u.* FROM unnest($3::date[], $4::text[], $5::int8[]) AS u
	ON CONFLICT (site, day, node, path) DO UPDATE SET pageviews = t.pageviews + EXCLUDED.pageviews`
)

// queue queues the statements that add p to site's counts, node's rows
// where counts are kept per node. Empty tables are skipped.
func (p *payload) queue(q *pgx.Batch, site, node string) {
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
	if r := &p.dayPaths; len(r.keys) > 0 {
		q.Queue(upsertDayPaths, site, node, r.keys, r.paths, r.views)
	}
	q.Queue(lockShared, site)
	for _, v := range []struct {
		sql string
		set *pairs
	}{{addMinuteVisitors, &p.minuteVisitors}, {addHourVisitors, &p.hourVisitors}, {addDayVisitors, &p.dayVisitors}} {
		if len(v.set.keys) > 0 {
			q.Queue(v.sql, site, node, v.set.keys, v.set.visitors)
		}
	}
	for _, v := range []struct {
		sql  string
		rows *pathRows
	}{{upsertSecondPaths, &p.secondPaths}, {upsertWindowMinutes, &p.windowMinutePaths}} {
		if len(v.rows.keys) > 0 {
			q.Queue(v.sql, site, v.rows.keys, v.rows.paths, v.rows.views)
		}
	}
	// Last: the rows most nodes touch in the same seconds, whose locks
	// are then held for the shortest time.
	if len(p.lastSeen.keys) > 0 {
		q.Queue(upsertLastSeen, site, p.lastSeen.visitors, p.lastSeen.keys)
	}
}
