package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// pruneBatch is how many keys one pruning transaction deletes at most, so
// that pruning never holds the write lock for long.
const pruneBatch = 1000

// Pruned is what one pruning pass deleted of one kind of history.
type Pruned struct {
	Site     string        // the site whose history it is
	What     string        // minutes, hours, days, or "per-day page counts"
	Count    int           // minutes, hours or days deleted
	From, To time.Time     // the first and the last of them
	KeptFrom time.Time     // the oldest kept: where the retention starts
	Keep     time.Duration // the retention that expired them
}

// Prune compacts the path log, folds finished days into the all-time path
// totals, and deletes expired data in small transactions: minutes past the
// minute retention, hours and per-day path counts past the hour retention,
// days past the day retention, each counted back from the newest line
// stored (see retention.go), and turns the exact visitor sets of minutes
// further than ExactVisitorsSpan behind the newest minute into their
// sketches. It returns what it deleted of each resolution, leaving out the
// visitor sets, which only turn exact counts into kept ones.
//
// Every site is pruned in turn, its retention counted back from its own
// newest line: a site that stopped receiving lines keeps its last history.
func (s *Store) Prune(ctx context.Context) ([]Pruned, error) {
	now := s.now()
	var out []Pruned
	for _, si := range s.siteList() {
		pruned, err := si.prune(ctx, now)
		out = append(out, pruned...)
		if err != nil {
			return out, fmt.Errorf("site %s: %w", si.name, err)
		}
	}
	return out, nil
}

// prune is Prune of one site.
func (s *Site) prune(ctx context.Context, now time.Time) ([]Pruned, error) {
	var f floors
	if err := s.st.view(func(tx *bolt.Tx) error { f = s.floors(tx); return nil }); err != nil {
		return nil, err
	}
	jobs := s.pruneJobs(f, s.st.Retention())
	if err := s.tidy(ctx, now); err != nil {
		return nil, err
	}
	var out []Pruned
	for _, j := range jobs {
		p, err := s.runJob(ctx, j)
		if p.Count > 0 {
			out = append(out, p)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// pruneJob is the deletion of one kind of history before its floor.
type pruneJob struct {
	what   string
	name   []byte
	end    []byte // delete keys before this
	prefix int    // key bytes that name one minute, hour or day
	unit   func(k []byte) time.Time
	keep   time.Duration
}

// pruneJobs returns what retention r expires, as of the floors f.
func (s *Site) pruneJobs(f floors, r Retention) []pruneJob {
	var jobs []pruneJob
	if f.minute > 0 {
		jobs = append(jobs, pruneJob{"minutes", bucketMinutes, u64(uint64(f.minute)), 8, minuteTime, r.Minutes})
	}
	if f.hour > 0 {
		jobs = append(jobs, pruneJob{"hours", bucketHours, u64(uint64(f.hour)), 8, hourTime, r.Hours},
			pruneJob{"per-day page counts", bucketDayPaths, dayBytes(f.dayPaths), 4, s.dayTime, r.Hours})
	}
	if f.day > 0 {
		jobs = append(jobs, pruneJob{"days", bucketDays, dayBytes(f.day), 4, s.dayTime, r.Days})
	}
	return jobs
}

// tidy does what pruning does before it deletes: it compacts the path log,
// folds the days before now's into the all-time path totals, and turns the
// exact visitor sets of minutes further than ExactVisitorsSpan behind the
// newest into their sketches.
func (s *Site) tidy(ctx context.Context, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Folding days compacts the path log in its transaction; with no day
	// to fold, the log is compacted alone.
	folded, err := s.foldDays(dayKey(now, s.loc))
	if err != nil {
		return err
	}
	if !folded {
		if err := s.compact(ctx); err != nil {
			return err
		}
	}
	last, ok, err := s.Last()
	if err != nil || !ok {
		return err
	}
	_, err = s.compactSets(ctx, minuteKey(last.Add(-s.cfg.ExactVisitorsSpan)), now)
	return err
}

// runJob deletes what j expires, and says what it deleted.
func (s *Site) runJob(ctx context.Context, j pruneJob) (Pruned, error) {
	p := Pruned{Site: s.name, What: j.what, KeptFrom: j.unit(j.end), Keep: j.keep}
	var prev []byte
	_, err := s.deleteAllBefore(ctx, j.name, j.end, nil, func(k []byte) {
		if prev != nil && bytes.Equal(prev[:j.prefix], k[:j.prefix]) {
			return
		}
		if p.Count == 0 {
			p.From = j.unit(k)
		}
		p.Count++
		p.To = j.unit(k)
		prev = k
	})
	return p, err
}

// errNothingToDelete rolls back a pruning transaction that found nothing
// to delete: committing it would change nothing and cost two syncs, once
// for each kind of history of each site a pass looks at.
var errNothingToDelete = errors.New("nothing to delete")

// deleteBefore deletes up to pruneBatch keys before end from a site bucket,
// passing over those keep says to keep (keep may be nil), and calls deleted
// (if not nil) with each key it deleted, in order, once they are. Keys are
// collected first and deleted after, as a bbolt cursor must not see its
// bucket change.
func (s *Site) deleteBefore(name, end []byte, keep func(k []byte) bool, deleted func(k []byte)) (int, error) {
	n := 0
	var keys [][]byte
	err := s.st.update(func(tx *bolt.Tx) error {
		b := s.bucket(tx, name)
		keys = keys[:0]
		c := b.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0 && len(keys) < pruneBatch; k, _ = c.Next() {
			if keep == nil || !keep(k) {
				keys = append(keys, bytes.Clone(k))
			}
		}
		if len(keys) == 0 {
			return errNothingToDelete
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if errors.Is(err, errNothingToDelete) {
		return 0, nil
	}
	if err == nil && deleted != nil {
		for _, k := range keys {
			deleted(k)
		}
	}
	return n, err
}

// deleteAllBefore deletes keys before end in transactions of pruneBatch,
// calling deleted as deleteBefore does.
func (s *Site) deleteAllBefore(ctx context.Context, name, end []byte, keep func([]byte) bool, deleted func([]byte)) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := s.deleteBefore(name, end, keep, deleted)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

// RunPruner prunes every interval until ctx is done, logging what each
// pass deleted, and compacts the path log whenever a commit finds it has
// grown past its soft bounds.
func (s *Store) RunPruner(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.PruneLogged(ctx, log); err != nil && ctx.Err() == nil {
			log.Warn("prune", "err", err)
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
				if err := s.compactWanted(ctx); err != nil && ctx.Err() == nil {
					log.Warn("compact", "err", err)
				}
			case <-t.C:
				waiting = false
			}
		}
	}
}

// siteAttr is the log attribute that names a site other than the default:
// a store that counts one site logs as it did before it counted several.
func siteAttr(site string) []any {
	if site == logtally.DefaultSite {
		return nil
	}
	return []any{"site", site}
}

// PruneLogged prunes once, and logs what it deleted: nothing is deleted
// without a log line that says what, from when to when, and why.
func (s *Store) PruneLogged(ctx context.Context, log *slog.Logger) error {
	pruned, err := s.Prune(ctx)
	for _, p := range pruned {
		log.Info("pruned history past its retention", append(siteAttr(p.Site), "what", p.What, "deleted", p.Count,
			"from", p.From.Format(time.RFC3339), "to", p.To.Format(time.RFC3339),
			"kept_from", p.KeptFrom.Format(time.RFC3339), "keep", FormatSpan(p.Keep))...)
	}
	return err
}
