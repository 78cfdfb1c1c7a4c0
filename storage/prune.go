package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// pruneBatch is how many keys one pruning transaction deletes at most, so
// that pruning never holds the write lock for long.
const pruneBatch = 1000

// Prune compacts the path log, folds finished days into the all-time path
// totals, and deletes expired data in small transactions: minutes past the
// minute retention, hours and per-day path counts past the hour retention,
// days past the day retention, and the exact visitor sets of minutes further
// than ExactVisitorsSpan behind the newest minute. It returns how many keys
// it deleted.
func (s *Store) Prune(ctx context.Context) (int, error) {
	now := s.now()
	type job struct {
		name []byte
		end  []byte // delete keys before this
	}
	jobs := []job{
		{bucketMinutes, minuteKey(now.Add(-s.cfg.MinuteRetention))},
		{bucketHours, u64(uint64(logtally.FloorDiv(now.Add(-s.cfg.HourRetention).Unix(), 3600)))},
		{bucketDayPaths, dayKey(now.Add(-s.cfg.HourRetention), s.loc)},
	}
	if s.cfg.DayRetention > 0 {
		jobs = append(jobs, job{bucketDays, dayKey(now.Add(-s.cfg.DayRetention), s.loc)})
	}
	if err := s.compact(ctx); err != nil {
		return 0, err
	}
	if err := s.foldDays(dayKey(now, s.loc)); err != nil {
		return 0, err
	}
	last, ok, err := s.Last()
	if err != nil {
		return 0, err
	}
	total := 0
	if ok {
		n, err := s.compactVisitors(ctx, minuteKey(last.Add(-s.cfg.ExactVisitorsSpan)), now)
		total += n
		if err != nil {
			return total, err
		}
	}
	for _, j := range jobs {
		n, err := s.deleteAllBefore(ctx, j.name, j.end, nil)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// deleteBefore deletes up to pruneBatch keys before end from a site bucket,
// passing over those keep says to keep (keep may be nil). Keys are collected
// first and deleted after, as a bbolt cursor must not see its bucket change.
func (s *Store) deleteBefore(name, end []byte, keep func(k []byte) bool) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := s.bucket(tx, name)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0 && len(keys) < pruneBatch; k, _ = c.Next() {
			if keep == nil || !keep(k) {
				keys = append(keys, bytes.Clone(k))
			}
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, err
}

// recentWrite is how long after a commit last wrote a minute its visitor set
// is kept whatever its age: a file being read from far behind the newest
// minute keeps writing the same old minute across several commits.
const recentWrite = 10 * time.Minute

// compactVisitors drops the exact visitor sets of minutes before end that no
// commit wrote in the last recentWrite.
func (s *Store) compactVisitors(ctx context.Context, end []byte, now time.Time) (int, error) {
	s.writeMu.Lock()
	recent := make(map[int64]bool)
	for m, t := range s.touched {
		if now.Sub(t) < recentWrite {
			recent[m] = true
		} else {
			delete(s.touched, m)
		}
	}
	s.writeMu.Unlock()
	keep := func(k []byte) bool { return recent[int64(binary.BigEndian.Uint64(k))] }
	return s.deleteAllBefore(ctx, bucketVisitors, end, keep)
}

// deleteAllBefore deletes keys before end in transactions of pruneBatch.
func (s *Store) deleteAllBefore(ctx context.Context, name, end []byte, keep func([]byte) bool) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := s.deleteBefore(name, end, keep)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

// RunPruner prunes every interval until ctx is done, and compacts the path
// log whenever a commit finds it has grown past its soft bounds.
func (s *Store) RunPruner(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.Prune(ctx); err != nil && ctx.Err() == nil {
			log.Warn("prune", "err", err)
		} else if n > 0 {
			log.Debug("pruned", "keys", n)
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case <-s.log.wake:
				if err := s.compact(ctx); err != nil && ctx.Err() == nil {
					log.Warn("compact", "err", err)
				}
			case <-t.C:
				waiting = false
			}
		}
	}
}
