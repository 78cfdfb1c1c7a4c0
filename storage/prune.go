package storage

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
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
// Every site is pruned, its retention counted back from its own newest
// line: a site that stopped receiving lines keeps its last history. The
// sites share the transactions (of up to pruneBatch keys, maxFoldDays
// days), so that a pass over a thousand sites, each with a minute to
// delete and a set to turn, costs a few commits, not thousands.
func (s *Store) Prune(ctx context.Context) ([]Pruned, error) {
	now := s.now()
	sites := s.siteList()
	fails := failures{}
	jobs := make([][]pruneJob, len(sites))
	fs := make([]floors, len(sites))
	for i, si := range sites {
		if err := s.view(func(tx *bolt.Tx) error { fs[i] = si.floors(tx); return nil }); err != nil {
			fails.add(si, err)
			continue
		}
		jobs[i] = si.pruneJobs(fs[i], s.Retention())
	}
	if err := s.tidy(ctx, sites, now, fails); err != nil {
		return nil, err
	}
	// Before the hours they are made of go (see lazyday.go).
	if err := s.storeLazyDays(ctx, sites, fs, fails); err != nil {
		return nil, err
	}
	var ds []*deletion
	for i, si := range sites {
		for _, j := range jobs[i] {
			if !fails.failed(si) {
				ds = append(ds, newDeletion(si, j))
			}
		}
	}
	err := s.deleteExpired(ctx, ds, fails)
	var out []Pruned
	for _, d := range ds {
		if d.p.Count > 0 {
			out = append(out, d.p)
		}
	}
	return out, errors.Join(err, fails.err(sites))
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

// tidy does what pruning does before it deletes, for every site of
// sites: it compacts the path log, folds the days before now's into the
// all-time path totals, and turns the exact visitor sets of minutes
// further than ExactVisitorsSpan behind the newest into their sketches.
// What the sites need done, a compaction of the log and a minute's set or
// two each a minute, a day to fold each a day, is done for them all in
// shared transactions (see foldDays, compactLogs and compactSets).
func (s *Store) tidy(ctx context.Context, sites []*Site, now time.Time, fails failures) error {
	var folds []fold
	var unfolded []*Site
	ends := make([][]byte, len(sites))
	for i, si := range sites {
		if err := ctx.Err(); err != nil {
			return err
		}
		if fails.failed(si) {
			continue
		}
		days, err := si.daysToFold(dayKey(now, si.loc))
		if err != nil {
			fails.add(si, err)
			continue
		}
		// Folding days compacts the path log in its transaction; with no
		// day to fold, the log is compacted with the other sites'.
		if len(days) > 0 {
			folds = append(folds, fold{si, days})
		} else {
			unfolded = append(unfolded, si)
		}
		last, ok, err := si.Last()
		if err != nil {
			fails.add(si, err)
			continue
		}
		if ok {
			ends[i] = minuteKey(last.Add(-si.cfg.ExactVisitorsSpan))
		}
	}
	s.foldDays(folds, fails)
	if err := s.compactLogsOf(ctx, unfolded, fails); err != nil {
		return err
	}
	_, err := s.compactSets(ctx, sites, ends, now, fails)
	return err
}

// deletion is what one prune job deletes, and says it deleted.
type deletion struct {
	si   *Site
	j    pruneJob
	p    Pruned
	prev []byte // the key deleted last
	done bool
}

func newDeletion(si *Site, j pruneJob) *deletion {
	return &deletion{si: si, j: j, p: Pruned{Site: si.name, What: j.what, KeptFrom: j.unit(j.end), Keep: j.keep}}
}

// deleted counts a key deleted, in order, once its transaction committed.
func (d *deletion) deleted(k []byte) {
	if d.prev != nil && bytes.Equal(d.prev[:d.j.prefix], k[:d.j.prefix]) {
		return
	}
	if d.p.Count == 0 {
		d.p.From = d.j.unit(k)
	}
	d.p.Count++
	d.p.To = d.j.unit(k)
	d.prev = k
}

// errNothingToDelete rolls back a pruning transaction that found nothing
// to delete: committing it would change nothing and cost two syncs.
var errNothingToDelete = errors.New("nothing to delete")

// deleteExpired deletes what the deletions expire, of every site at once,
// in transactions of up to pruneBatch keys: a pruner passing over a
// thousand sites a minute, each with a minute newly expired, commits one
// transaction, not a thousand (two syncs each).
func (s *Store) deleteExpired(ctx context.Context, ds []*deletion, fails failures) error {
	for pending := slices.Clone(ds); len(pending) > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.deleteRound(pending); err != nil {
			// Each site's deletions, in a round of their own (ds is in
			// the order of the sites).
			var bySite [][]*deletion
			for i, d := range pending {
				if i == 0 || d.si != pending[i-1].si {
					bySite = append(bySite, nil)
				}
				bySite[len(bySite)-1] = append(bySite[len(bySite)-1], d)
			}
			eachAlone(fails, bySite, func(own []*deletion) *Site { return own[0].si }, s.deleteRound)
		}
		pending = slices.DeleteFunc(pending, func(d *deletion) bool { return d.done || fails.failed(d.si) })
	}
	return nil
}

// deleteRound deletes, in one transaction, up to pruneBatch keys of the
// deletions, in order, and counts them (and which deletions are done)
// once it has committed. Keys are collected first and deleted after, as a
// bbolt cursor must not see its bucket change.
func (s *Store) deleteRound(ds []*deletion) error {
	type found struct {
		keys [][]byte
		done bool
	}
	var finds []found
	err := s.update(func(tx *bolt.Tx) error {
		finds = finds[:0]
		budget, n := pruneBatch, 0
		for _, d := range ds {
			if budget == 0 {
				break
			}
			b := d.si.bucket(tx, d.j.name)
			var f found
			c := b.Cursor()
			k, _ := c.First()
			for ; k != nil && bytes.Compare(k, d.j.end) < 0 && len(f.keys) < budget; k, _ = c.Next() {
				f.keys = append(f.keys, bytes.Clone(k))
			}
			f.done = k == nil || bytes.Compare(k, d.j.end) >= 0
			for _, k := range f.keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			budget -= len(f.keys)
			n += len(f.keys)
			finds = append(finds, f)
		}
		if n == 0 {
			return errNothingToDelete
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNothingToDelete) {
		return err
	}
	for i, f := range finds {
		for _, k := range f.keys {
			ds[i].deleted(k)
		}
		ds[i].done = f.done
	}
	return nil
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
