package fleet

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/logtally/logtally"
)

// readOnly runs fn in a read-only transaction that sees one snapshot of the
// database, so that the parts of one answer agree with each other.
func (s *Store) readOnly(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// Window returns the fleet's window of site that ends with the second of
// end and is length long: the seconds in (end-length, end]. It is exact to
// the second: requests and page views are summed over those seconds, and
// the visitors are the distinct visitors whose latest page view, on any
// node, is in them. A visitor whose latest page view is after end counts in
// the windows that hold that one, so a window that ends in the past can
// miss visitors seen again since; the live window (LiveWindow), which ends
// now, cannot. Pages are the window's most viewed paths, at most
// logtally.MaxPages.
func (s *Store) Window(ctx context.Context, site string, end time.Time, length time.Duration) (logtally.Snapshot, error) {
	snap, _, err := s.window(ctx, site, &end, length)
	return snap, err
}

// LiveWindow returns the fleet's live window of site: the Window of length
// that ends with the second of the database's clock, which every node reads
// alike, whatever its own clock says; and that clock's time.
func (s *Store) LiveWindow(ctx context.Context, site string, length time.Duration) (logtally.Snapshot, time.Time, error) {
	return s.window(ctx, site, nil, length)
}

// windowBounds begins each statement of a window: the bounds of the window
// of $3 seconds that ends with the second of $2 or, when $2 is NULL, of
// the database's clock (dbNow: one time for all the statements of a
// read). In w: at is that time, last its second (since
// the epoch), after the second before the window and up_to its last; the
// top pages add up whole minutes from window_minute_paths, [head_end,
// tail_start), and the seconds at either end from second_paths (no whole
// minute: seconds only).
const windowBounds = `WITH e AS (
		SELECT at, floor(extract(epoch FROM at))::int8 AS last FROM (SELECT coalesce($2::timestamptz, ` + dbNow + `) AS at) AS a),
	m AS (
		SELECT *, floor((last - $3::int8 + 60) / 60.0)::int8 AS first_minute, floor((last + 1) / 60.0)::int8 AS end_minute FROM e),
	w AS (
		SELECT at, last, to_timestamp(last - $3::int8) AS after, to_timestamp(last) AS up_to,
			CASE WHEN first_minute < end_minute THEN to_timestamp(first_minute * 60) ELSE to_timestamp(last + 1) END AS head_end,
			CASE WHEN first_minute < end_minute THEN to_timestamp(end_minute * 60) ELSE to_timestamp(last + 1) END AS tail_start
		FROM m)
	`

// The statements of a window, after windowBounds. Their bounds are scalar
// subqueries, so that the plans range over the tables' indexes.
const (
	windowCounts = windowBounds + `SELECT (SELECT at FROM w), (SELECT last FROM w),
		coalesce(sum(requests), 0)::int8, coalesce(sum(pageviews), 0)::int8, coalesce(sum(rejected), 0)::int8
		FROM logtally.seconds WHERE site = $1 AND second > (SELECT after FROM w) AND second <= (SELECT up_to FROM w)`

	windowVisitors = windowBounds + `SELECT count(*) FROM logtally.visitors
		WHERE site = $1 AND last_seen > (SELECT after FROM w) AND last_seen <= (SELECT up_to FROM w)`

	// The top pages add up the window's whole minutes, and of each minute
	// at its ends whichever costs fewer rows: the minute's seconds in the
	// window, or the whole minute (less its seconds before the window, at
	// the start; at the end, if it holds no second after the window's).
	windowPages = windowBounds + `, x AS (
			SELECT *, head_end - interval '1 minute' AS head_start,
				head_end < tail_start AND after < head_end - interval '30 seconds' AS head_by_prefix,
				head_end < tail_start AND NOT EXISTS (SELECT FROM logtally.seconds
					WHERE site = $1 AND second > up_to AND second < tail_start + interval '1 minute') AS tail_whole
			FROM w)
		SELECT path, sum(n)::int8 AS n FROM (
			SELECT path, pageviews AS n FROM logtally.window_minute_paths
			WHERE site = $1 AND minute >= (SELECT head_end FROM x) AND minute < (SELECT tail_start FROM x)
			UNION ALL
			SELECT path, pageviews FROM logtally.window_minute_paths
			WHERE site = $1 AND (minute = (SELECT tail_start FROM x) AND (SELECT tail_whole FROM x)
				OR minute = (SELECT head_start FROM x) AND (SELECT head_by_prefix FROM x))
			UNION ALL
			SELECT path, -pageviews FROM logtally.second_paths
			WHERE site = $1 AND (SELECT head_by_prefix FROM x)
				AND second >= (SELECT head_start FROM x) AND second <= (SELECT after FROM x)
			UNION ALL
			SELECT path, pageviews FROM logtally.second_paths
			WHERE site = $1 AND (second > (SELECT after FROM x) AND second < (SELECT head_end FROM x) AND NOT (SELECT head_by_prefix FROM x)
				OR second >= (SELECT tail_start FROM x) AND second <= (SELECT up_to FROM x) AND NOT (SELECT tail_whole FROM x))
		) AS p GROUP BY path HAVING sum(n) > 0 ORDER BY n DESC, path LIMIT $4`
)

// window reads the window of length that ends with the second of end, or
// of the database's clock if end is nil, and returns it with that time.
func (s *Store) window(ctx context.Context, site string, end *time.Time, length time.Duration) (logtally.Snapshot, time.Time, error) {
	n := int64(length / time.Second)
	if n < 1 {
		return logtally.Snapshot{}, time.Time{}, fmt.Errorf("fleet: window of %s: must be at least 1s", length)
	}
	var snap logtally.Snapshot
	var at time.Time
	var last int64
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		q := &pgx.Batch{}
		q.Queue(windowCounts, site, end, n).QueryRow(func(r pgx.Row) error {
			return r.Scan(&at, &last, &snap.Requests, &snap.PageViews, &snap.Rejected)
		})
		q.Queue(windowVisitors, site, end, n).QueryRow(func(r pgx.Row) error { return r.Scan(&snap.Visitors) })
		q.Queue(windowPages, site, end, n, logtally.MaxPages).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var p logtally.PageCount
				if err := rows.Scan(&p.Path, &p.PageViews); err != nil {
					return err
				}
				snap.Pages = append(snap.Pages, p)
			}
			return rows.Err()
		})
		return tx.SendBatch(ctx, q).Close()
	})
	if err != nil {
		return logtally.Snapshot{}, time.Time{}, fmt.Errorf("fleet: window: %w", err)
	}
	snap.From, snap.To = time.Unix(last-n+1, 0).UTC(), time.Unix(last+1, 0).UTC()
	snap.Length = time.Duration(n) * time.Second
	return snap, at, nil
}

// Series returns the fleet's history of site from the step that holds from
// to the step that holds to, one point per step, as storage.Store.Series
// does for one node. Steps under an hour are summed from minutes, 1h comes
// from hours (UTC), 1d from days in the fleet's zone.
//
// Visitors are exact for 1m, 1h and 1d steps: each minute, hour and day
// keeps its distinct visitors' count. A 5m or 15m point is counted
// distinct over its minutes' visitor sets while they are kept (the visitor
// span); an older one is the most visitors of any of its minutes, a lower
// bound, and the series says Approximate.
func (s *Store) Series(ctx context.Context, site string, from, to time.Time, step time.Duration) (logtally.Series, error) {
	out := logtally.Series{Step: step}
	if to.Before(from) {
		return out, nil
	}
	starts, err := seriesStarts(from, to, step, s.loc)
	if err != nil {
		return out, err
	}
	out.Points = make([]logtally.Point, len(starts))
	for i, t := range starts {
		out.Points[i].Time = t.UTC()
	}
	sq := &seriesQuery{out: &out, starts: starts, loc: s.loc, exactFrom: len(starts)}
	// Steps between a minute and an hour are counted distinct over the
	// minutes' visitor sets, from the first point whose sets are all still
	// kept.
	sq.distinct = step > time.Minute && step < time.Hour
	if sq.distinct {
		sq.exactFrom = max(sq.index(s.Now().Add(-s.cfg.VisitorSpan))+1, 0)
	}
	err = s.readOnly(ctx, func(tx pgx.Tx) error {
		q := &pgx.Batch{}
		table, key, lo, hi := "minutes", "minute", any(starts[0]), any(to)
		switch step {
		case time.Hour:
			table, key = "hours", "hour"
		case 24 * time.Hour:
			table, key = "days", "day"
			lo, hi = dateOf(starts[0], s.loc), dateOf(to, s.loc)
		}
		q.Queue(fmt.Sprintf(`SELECT %[2]s, sum(requests)::int8, sum(pageviews)::int8, sum(visitors)::int8, bool_or(approximate)
			FROM logtally.%[1]s WHERE site = $1 AND %[2]s >= $2 AND %[2]s <= $3 GROUP BY %[2]s`, table, key),
			site, lo, hi).Query(sq.addSums)
		if sq.distinct && sq.exactFrom < len(starts) {
			q.Queue(`SELECT floor(extract(epoch FROM minute) / $4::int8)::int8 * $4::int8, count(DISTINCT visitor)
				FROM logtally.minute_visitors WHERE site = $1 AND minute >= $2 AND minute <= $3 GROUP BY 1`,
				site, starts[sq.exactFrom], to, int64(step/time.Second)).Query(sq.setDistinct)
		}
		return tx.SendBatch(ctx, q).Close()
	})
	if err != nil {
		return logtally.Series{Step: step}, fmt.Errorf("fleet: series: %w", err)
	}
	return out, nil
}

// seriesStarts returns the start of each point of a series from..to by
// step: calendar days in loc, or steps that divide an hour into whole
// minutes; another step, or more than logtally.MaxPoints points, is
// logtally.ErrTooManyPoints.
func seriesStarts(from, to time.Time, step time.Duration, loc *time.Location) ([]time.Time, error) {
	var starts []time.Time
	switch {
	case step == 24*time.Hour:
		y, m, d := from.In(loc).Date()
		for t := time.Date(y, m, d, 0, 0, 0, 0, loc); !t.After(to); t = t.AddDate(0, 0, 1) {
			if len(starts) == logtally.MaxPoints {
				return nil, logtally.ErrTooManyPoints
			}
			starts = append(starts, t)
		}
	case step > 0 && step <= time.Hour && time.Hour%step == 0 && step%time.Minute == 0:
		first := from.Truncate(step)
		if n := to.Sub(first)/step + 1; n > logtally.MaxPoints {
			return nil, logtally.ErrTooManyPoints
		}
		for t := first; !t.After(to); t = t.Add(step) {
			starts = append(starts, t)
		}
	default:
		return nil, fmt.Errorf("step %s: %w", step, logtally.ErrTooManyPoints)
	}
	return starts, nil
}

// seriesQuery is one Series call's points, filled in as its rows come.
type seriesQuery struct {
	out       *logtally.Series
	starts    []time.Time
	loc       *time.Location
	distinct  bool // visitors are counted distinct over the minutes' sets (5m, 15m)
	exactFrom int  // with distinct, the first point whose minutes' sets are all kept
}

// index returns the point of t: the last one starting at or before t, or
// -1.
func (sq *seriesQuery) index(t time.Time) int {
	return sort.Search(len(sq.starts), func(i int) bool { return sq.starts[i].After(t) }) - 1
}

// addSums adds rows of minutes, hours or days to their points. A point
// counted distinct over visitor sets takes its visitors from setDistinct,
// unless its sets are pruned: then the most of any of its rows, a lower
// bound.
func (sq *seriesQuery) addSums(rows pgx.Rows) error {
	out := sq.out
	for rows.Next() {
		var t time.Time
		var p logtally.Point
		var approximate bool
		if err := rows.Scan(&t, &p.Requests, &p.PageViews, &p.Visitors, &approximate); err != nil {
			return err
		}
		if out.Step == 24*time.Hour {
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, sq.loc)
		}
		i := sq.index(t)
		if i < 0 {
			continue
		}
		pt := &out.Points[i]
		pt.Requests += p.Requests
		pt.PageViews += p.PageViews
		switch {
		case !sq.distinct:
			pt.Visitors += p.Visitors
			out.Approximate = out.Approximate || approximate
		case i < sq.exactFrom:
			pt.Visitors = max(pt.Visitors, p.Visitors)
			out.Approximate = true
		}
	}
	return rows.Err()
}

// setDistinct sets the visitors of points counted distinct over their
// minutes' visitor sets, from rows of (point start, visitors).
func (sq *seriesQuery) setDistinct(rows pgx.Rows) error {
	for rows.Next() {
		var sec, n int64
		if err := rows.Scan(&sec, &n); err != nil {
			return err
		}
		if i := sq.index(time.Unix(sec, 0)); i >= 0 {
			sq.out.Points[i].Visitors = n
		}
	}
	return rows.Err()
}

// dateOf returns the calendar day of t in loc, as a date for PostgreSQL.
func dateOf(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// PathCounts returns the fleet's page views of each path on the day that
// holds day (in the fleet's zone) and in all.
func (s *Store) PathCounts(ctx context.Context, site string, paths []string, day time.Time) ([]logtally.PathCount, error) {
	out := make([]logtally.PathCount, 0, len(paths))
	rows, err := s.pool.Query(ctx, `SELECT p.path,
			coalesce((SELECT sum(d.pageviews)::int8 FROM logtally.day_paths d WHERE d.site = $1 AND d.day = $3 AND d.path = p.path), 0),
			coalesce((SELECT sum(d.pageviews)::int8 FROM logtally.day_paths d WHERE d.site = $1 AND d.path = p.path), 0)
			+ coalesce((SELECT a.pageviews FROM logtally.paths a WHERE a.site = $1 AND a.path = p.path), 0)
		FROM unnest($2::text[]) WITH ORDINALITY AS p(path, i) ORDER BY p.i`,
		site, paths, dateOf(day, s.loc))
	if err != nil {
		return nil, fmt.Errorf("fleet: path counts: %w", err)
	}
	for rows.Next() {
		var c logtally.PathCount
		if err := rows.Scan(&c.Path, &c.Day, &c.Total); err != nil {
			return nil, fmt.Errorf("fleet: path counts: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: path counts: %w", err)
	}
	return out, nil
}

// History answers history queries for one site with a time limit, in the
// shape of the API's History interface (Series and PathCounts without a
// context).
type History struct {
	Store   *Store
	Site    string
	Timeout time.Duration // each query's limit; none if zero
}

func (h History) ctx() (context.Context, context.CancelFunc) {
	if h.Timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), h.Timeout)
}

// Series is Store.Series for h.Site.
func (h History) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	ctx, cancel := h.ctx()
	defer cancel()
	return h.Store.Series(ctx, h.Site, from, to, step)
}

// PathCounts is Store.PathCounts for h.Site.
func (h History) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	ctx, cancel := h.ctx()
	defer cancel()
	return h.Store.PathCounts(ctx, h.Site, paths, day)
}
