package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

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

// countRows are rows of a count table (minutes, hours, days, seconds), one
// array per column, as the statements unnest them.
type countRows struct {
	keys        []time.Time
	cols        [9][]int64 // requests, pageviews, bytes, rejected, status 1xx..5xx
	approximate []bool
}

// sums are the counts a delta adds to a row.
type sums [9]int64

func (c *sums) add(d *tally.Delta) {
	c[0] += d.Requests
	c[1] += d.PageViews
	c[2] += d.Bytes
	c[3] += d.Rejected
	for i, n := range d.Status {
		c[4+i] += n
	}
}

func (r *countRows) add(key time.Time, c *sums, approximate bool) {
	r.keys = append(r.keys, key)
	for i, n := range c {
		r.cols[i] = append(r.cols[i], n)
	}
	r.approximate = append(r.approximate, approximate)
}

// pairs are (bucket, visitor) rows.
type pairs struct {
	keys     []time.Time
	visitors []int64
}

// pathRows are (bucket, path, page views) rows.
type pathRows struct {
	keys  []time.Time
	paths []string
	views []int64
}

// payload is a batch turned into rows: what Apply sends.
type payload struct {
	minutes, hours, days                      countRows
	minuteVisitors, hourVisitors, dayVisitors pairs
	seconds                                   countRows
	lastSeen                                  pairs // keys: the visitor's latest second; visitors: the visitor
	secondPaths, windowMinutePaths, dayPaths  pathRows
}

// bucket is an hour's or a day's share of a batch while it is gathered.
type bucket struct {
	key      time.Time
	sums     sums
	visitors []int64
	sealed   bool
}

// prepare turns b into rows, before any transaction is open. now decides
// which buckets' visitor sets may already be pruned (sealed): their
// visitors are left out and their rows marked approximate.
func (s *Store) prepare(b *tally.Batch, now time.Time) *payload {
	p := &payload{}
	sealedBefore := now.Add(-s.cfg.VisitorSpan) // a bucket ending at or before this is sealed
	names := b.Paths()
	var hours, days []*bucket
	dayViews := map[time.Time]map[int32]int64{}
	var set []int64
	for minute, d := range b.Minutes() {
		start := time.Unix(minute*60, 0).UTC()
		var c sums
		c.add(d)
		set = visitorSet(set[:0], d.Visitors)
		sealed := !start.Add(time.Minute).After(sealedBefore)
		p.minutes.add(start, &c, sealed && len(set) > 0)
		if !sealed {
			for _, v := range set {
				p.minuteVisitors.keys = append(p.minuteVisitors.keys, start)
				p.minuteVisitors.visitors = append(p.minuteVisitors.visitors, v)
			}
		}

		hour := start.Truncate(time.Hour)
		if len(hours) == 0 || !hours[len(hours)-1].key.Equal(hour) {
			hours = append(hours, &bucket{key: hour, sealed: !hour.Add(time.Hour).After(sealedBefore)})
		}
		h := hours[len(hours)-1]
		h.sums.add(d)
		h.visitors = append(h.visitors, set...)

		local := start.In(s.loc)
		y, m, dd := local.Date()
		day := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
		if len(days) == 0 || !days[len(days)-1].key.Equal(day) {
			end := time.Date(y, m, dd+1, 0, 0, 0, 0, s.loc)
			days = append(days, &bucket{key: day, sealed: !end.After(sealedBefore)})
		}
		dy := days[len(days)-1]
		dy.sums.add(d)
		dy.visitors = append(dy.visitors, set...)

		if len(d.Views) > 0 {
			dv := dayViews[day]
			if dv == nil {
				dv = map[int32]int64{}
				dayViews[day] = dv
			}
			for _, id := range d.Views {
				dv[id]++
			}
		}
	}
	for _, bs := range []struct {
		buckets []*bucket
		rows    *countRows
		sets    *pairs
	}{{hours, &p.hours, &p.hourVisitors}, {days, &p.days, &p.dayVisitors}} {
		for _, k := range bs.buckets {
			slices.Sort(k.visitors)
			k.visitors = slices.Compact(k.visitors)
			bs.rows.add(k.key, &k.sums, k.sealed && len(k.visitors) > 0)
			if k.sealed {
				continue
			}
			for _, v := range k.visitors {
				bs.sets.keys = append(bs.sets.keys, k.key)
				bs.sets.visitors = append(bs.sets.visitors, v)
			}
		}
	}
	for _, day := range slices.SortedFunc(maps.Keys(dayViews), func(a, b time.Time) int { return a.Compare(b) }) {
		appendPathRows(&p.dayPaths, day, dayViews[day], names)
	}

	last := map[int64]int64{} // visitor -> its latest second in the batch
	views := map[int32]int64{}
	minuteViews := map[int32]int64{}
	minute := int64(math.MinInt64)
	for sec, d := range b.Seconds() {
		start := time.Unix(sec, 0).UTC()
		c := sums{d.Requests, d.PageViews, 0, d.Rejected}
		p.seconds.add(start, &c, false)
		for _, v := range d.Visitors {
			last[int64(v)] = sec // seconds come in time order
		}
		clear(views)
		for _, id := range d.Views {
			views[id]++
		}
		appendPathRows(&p.secondPaths, start, views, names)
		if m := logtally.FloorDiv(sec, 60); m != minute {
			if len(minuteViews) > 0 {
				if len(minuteViews) > 0 {
					appendPathRows(&p.windowMinutePaths, time.Unix(minute*60, 0).UTC(), minuteViews, names)
				}
				clear(minuteViews)
			}
			minute = m
		}
		for id, n := range views {
			minuteViews[id] += n
		}
	}
	if len(minuteViews) > 0 {
		appendPathRows(&p.windowMinutePaths, time.Unix(minute*60, 0).UTC(), minuteViews, names)
	}
	for _, v := range slices.Sorted(maps.Keys(last)) {
		p.lastSeen.visitors = append(p.lastSeen.visitors, v)
		p.lastSeen.keys = append(p.lastSeen.keys, time.Unix(last[v], 0).UTC())
	}
	return p
}

// visitorSet appends to dst the distinct visitors of vs as signed bigints
// (how PostgreSQL stores them), sorted in their order.
func visitorSet(dst []int64, vs []uint64) []int64 {
	for _, v := range vs {
		dst = append(dst, int64(v))
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}

// appendPathRows appends one bucket's page views per path, sorted by path:
// every transaction takes the rows' locks in the same order, so two nodes
// adding to the same paths wait for each other but never deadlock.
func appendPathRows(r *pathRows, key time.Time, views map[int32]int64, names []string) {
	ids := slices.SortedFunc(maps.Keys(views), func(a, b int32) int { return cmp.Compare(names[a], names[b]) })
	for _, id := range ids {
		r.keys = append(r.keys, key)
		r.paths = append(r.paths, names[id])
		r.views = append(r.views, views[id])
	}
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
