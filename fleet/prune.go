package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pruneLock is the advisory lock a pruning node holds, so that the fleet's
// nodes do not all prune at once: one prunes, the others skip.
const pruneLock = schemaLock + 1

// pruneMargin is how much longer Prune keeps visitor sets than Apply uses
// them: Apply stops adding to a bucket's set by its own node's clock, and
// Prune deletes it by the database's, so clocks an hour apart still agree.
const pruneMargin = time.Hour

// pruneChunk is the most rows one statement of Prune deletes, so that no
// transaction of it holds many locks or runs long.
const pruneChunk = 10_000

// Prune deletes what the retention settings no longer keep, as of the
// database's clock: live-window seconds older than the longest window and
// skew of any node (the live span), visitor sets older than the visitor
// span (plus a margin), minutes, hours and days past their retention, and
// per-day page views past the hours' retention, whose counts it first adds
// to the all-time per-path totals. It returns the rows deleted per table,
// and logs them.
//
// Every node prunes by this one rule, whatever its own clock and --window:
// the live span is the longest window plus max skew that a node registered
// in logtally.nodes uses, and at least this node's own. Only one node
// prunes at a time: if another holds the prune lock, Prune does nothing
// and returns no counts.
func (s *Store) Prune(ctx context.Context) (map[string]int64, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet: prune: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(pruneLock)).Scan(&locked); err != nil {
		return nil, fmt.Errorf("fleet: prune: %w", err)
	}
	if !locked {
		s.log.Debug("fleet: prune: another node is pruning")
		return nil, nil
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(pruneLock))

	now, live, err := s.pruneRule(ctx, conn)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, st := range s.pruneSteps(now, live) {
		if err := st.run(ctx, conn, out); err != nil {
			return out, err
		}
	}
	if err := foldDayPaths(ctx, conn, dateOf(now.Add(-s.cfg.HourRetention), s.loc), out); err != nil {
		return out, err
	}
	var attrs []any
	for _, table := range slices.Sorted(maps.Keys(out)) {
		if n := out[table]; n > 0 {
			attrs = append(attrs, table, n)
		}
	}
	if len(attrs) > 0 {
		s.log.Info("fleet: pruned", append(attrs, "live_span", live)...)
	}
	return out, nil
}

// pruneRule returns the database's clock and the live span: the longest
// window plus max skew of any node registered in logtally.nodes, and at
// least this node's own. The clock is read before the deletes, which it
// dates a moment early: they keep a little more, never less.
func (s *Store) pruneRule(ctx context.Context, conn *pgxpool.Conn) (now time.Time, live time.Duration, err error) {
	var secs int64
	err = conn.QueryRow(ctx, `SELECT `+dbNow+`,
			coalesce(max(coalesce(window_seconds, 0) + coalesce(max_skew_seconds, 0)), 0)::int8
		FROM logtally.nodes`).Scan(&now, &secs)
	if err != nil {
		return now, 0, fmt.Errorf("fleet: prune: the fleet's clock and windows: %w", err)
	}
	return now, max(s.cfg.Window+s.cfg.MaxSkew, time.Duration(secs)*time.Second), nil
}

// pruneStep deletes the rows of table for which cond holds of arg ($1).
type pruneStep struct {
	table, cond string
	arg         any
}

// pruneSteps returns what the retention settings delete as of now, with
// the live window's rows kept for live, in order: the live window's rows,
// the visitor sets, then the counts.
func (s *Store) pruneSteps(now time.Time, live time.Duration) []pruneStep {
	cut := now.Add(-live)
	sets := now.Add(-s.cfg.VisitorSpan - pruneMargin)
	steps := []pruneStep{
		{"seconds", "second <= $1", cut},
		{"second_paths", "second <= $1", cut},
		{"window_minute_paths", "minute <= $1", cut.Add(-time.Minute)},
		{"visitors", "last_seen <= $1", cut},
		{"minute_visitors", "minute < $1", sets.Add(-time.Minute)},
		{"hour_visitors", "hour < $1", sets.Add(-time.Hour)},
		{"day_visitors", "day < $1", dateOf(sets, s.loc)}, // days that ended by then
		{"minutes", "minute < $1", now.Add(-s.cfg.MinuteRetention)},
		{"hours", "hour < $1", now.Add(-s.cfg.HourRetention)},
	}
	if s.cfg.DayRetention > 0 {
		steps = append(steps, pruneStep{"days", "day < $1", dateOf(now.Add(-s.cfg.DayRetention), s.loc)})
	}
	return steps
}

// run deletes the step's rows, pruneChunk at a time, and adds how many to
// out.
func (st pruneStep) run(ctx context.Context, conn *pgxpool.Conn, out map[string]int64) error {
	sql := fmt.Sprintf(`DELETE FROM logtally.%[1]s WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM logtally.%[1]s WHERE %[2]s LIMIT %[3]d))`, st.table, st.cond, pruneChunk)
	for {
		tag, err := conn.Exec(ctx, sql, st.arg)
		if err != nil {
			return fmt.Errorf("fleet: prune %s: %w", st.table, err)
		}
		out[st.table] += tag.RowsAffected()
		if tag.RowsAffected() < pruneChunk {
			return nil
		}
	}
}

// foldDayPaths moves the per-day page views of days before before into the
// all-time totals, pruneChunk rows at a time, and adds how many to out: the
// rows a statement deletes are the rows it adds, so a path's total never
// changes on the way.
func foldDayPaths(ctx context.Context, conn *pgxpool.Conn, before time.Time, out map[string]int64) error {
	sql := fmt.Sprintf(`WITH gone AS (
			DELETE FROM logtally.day_paths WHERE ctid = ANY(ARRAY(
				SELECT ctid FROM logtally.day_paths WHERE day < $1 LIMIT %d))
			RETURNING site, path, pageviews),
		folded AS (
			INSERT INTO logtally.paths AS t (site, path, pageviews)
			SELECT site, path, sum(pageviews) FROM gone GROUP BY site, path ORDER BY site, path
			ON CONFLICT (site, path) DO UPDATE SET pageviews = t.pageviews + EXCLUDED.pageviews)
		SELECT count(*) FROM gone`, pruneChunk)
	for {
		var n int64
		if err := conn.QueryRow(ctx, sql, before).Scan(&n); err != nil {
			return fmt.Errorf("fleet: prune day_paths: %w", err)
		}
		out["day_paths"] += n
		if n < pruneChunk {
			return nil
		}
	}
}

// RunPruner prunes every interval until ctx is done.
func (s *Store) RunPruner(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Prune(ctx); err != nil && ctx.Err() == nil {
			log.Warn("fleet: prune", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
