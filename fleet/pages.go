package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/logtally/logtally"
)

// Pages returns the fleet's most viewed paths of site over the range
// [from, to], taken to the minute, as the API's GET /api/v1/pages?from&to
// answers them. The fleet keeps page views per path by day, in its zone
// (logtally.day_paths), and not by minute: a range that starts or ends
// within a day counts those days whole, and says it is not exact. Days are
// kept as long as hours (Config.HourRetention; Prune folds older ones into
// the all-time totals): a range that begins before counts what is kept and
// says from when.
func (s *Store) Pages(ctx context.Context, site string, from, to time.Time, limit int) (logtally.PageRange, error) {
	lo, hi := from.Truncate(time.Minute), to.Truncate(time.Minute).Add(time.Minute) // [lo, hi)
	first, last := dateOf(lo, s.loc), dateOf(hi.Add(-time.Minute), s.loc)
	out := logtally.PageRange{Exact: startsDay(lo, s.loc) && startsDay(hi, s.loc)}
	if kept := dateOf(s.Now().Add(-s.cfg.HourRetention), s.loc); first.Before(kept) {
		y, m, d := kept.Date()
		out.KeptFrom, out.Exact, first = time.Date(y, m, d, 0, 0, 0, 0, s.loc), false, kept
	}
	rows, err := s.pool.Query(ctx, `SELECT path, sum(pageviews)::int8 AS n FROM logtally.day_paths
		WHERE site = $1 AND day >= $2 AND day <= $3 GROUP BY path ORDER BY n DESC, path LIMIT $4`,
		site, first, last, limit)
	if err != nil {
		return out, fmt.Errorf("fleet: pages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p logtally.PageCount
		if err := rows.Scan(&p.Path, &p.PageViews); err != nil {
			return out, fmt.Errorf("fleet: pages: %w", err)
		}
		out.Pages = append(out.Pages, p)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("fleet: pages: %w", err)
	}
	return out, nil
}

// startsDay reports whether t is the start of a day in loc.
func startsDay(t time.Time, loc *time.Location) bool {
	l := t.In(loc)
	return l.Hour() == 0 && l.Minute() == 0 && l.Second() == 0 && l.Nanosecond() == 0
}

// Pages answers the site's top pages of a range, within a time limit: the
// API's PageHistory.
func (h SiteHistory) Pages(from, to time.Time, limit int) (logtally.PageRange, error) {
	st := h.n.store.Load()
	if st == nil {
		return logtally.PageRange{}, ErrNotConnected
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	return st.Pages(ctx, h.site, from, to, limit)
}

// Pages answers the top pages of a range of the node's site, within a
// time limit: the API's PageHistory.
func (n *Node) Pages(from, to time.Time, limit int) (logtally.PageRange, error) {
	return n.SiteHistory(n.site()).Pages(from, to, limit)
}
