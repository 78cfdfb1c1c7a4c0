package storage

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Minutes returns the stored minutes in [from, to], oldest first.
func (s *Site) Minutes(from, to time.Time) ([]logtally.Bucket, error) {
	var out []logtally.Bucket
	err := s.db.View(func(tx *bolt.Tx) error {
		return scan(s.bucket(tx, bucketMinutes), minuteKey(from), minuteKey(to), false,
			func(k []byte, r *record) {
				out = append(out, logtally.Bucket{Time: minuteTime(k), Counts: r.Counts})
			})
	})
	return out, err
}

// scan decodes the records with keys in [lo, hi] in key order.
func scan(b *bolt.Bucket, lo, hi []byte, withSketch bool, fn func(k []byte, r *record)) error {
	c := b.Cursor()
	for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) <= 0; k, v = c.Next() {
		var r record
		if err := r.decode(v, withSketch); err != nil {
			return fmt.Errorf("key %x: %w", k, err)
		}
		fn(k, &r)
	}
	return nil
}

// Last returns the start of the newest stored minute, and whether there is one.
func (s *Site) Last() (t time.Time, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		k, _ := s.bucket(tx, bucketMinutes).Cursor().Last()
		if k != nil {
			t, ok = minuteTime(k), true
		}
		return nil
	})
	return t, ok, err
}

// Series returns one point per step from the step containing from to the
// step containing to. Steps under an hour come from minutes, 1h from hours,
// 1d from days in the store's zone. Visitors per point are the distinct
// visitors within that step: exact for a one-minute step unless the minute
// says otherwise, estimated by merging sketches for longer steps. KeptFrom
// says from which step on the retention holds everything.
func (s *Site) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	out := logtally.Series{Step: step}
	if to.Before(from) {
		return out, nil
	}
	var starts []time.Time
	switch step {
	case 24 * time.Hour:
		loc := s.loc
		y, m, d := from.In(loc).Date()
		for t := time.Date(y, m, d, 0, 0, 0, 0, loc); !t.After(to); t = t.AddDate(0, 0, 1) {
			if len(starts) == logtally.MaxPoints {
				return out, logtally.ErrTooManyPoints
			}
			starts = append(starts, t)
		}
	default:
		if step <= 0 || step > time.Hour {
			return out, fmt.Errorf("step %s: %w", step, logtally.ErrTooManyPoints)
		}
		first := from.Truncate(step)
		if n := to.Sub(first)/step + 1; n > logtally.MaxPoints {
			return out, logtally.ErrTooManyPoints
		}
		for t := first; !t.After(to); t = t.Add(step) {
			starts = append(starts, t)
		}
	}
	out.Points = make([]logtally.Point, len(starts))
	for i, t := range starts {
		out.Points[i].Time = t.UTC()
	}
	index := func(t time.Time) int { // the last step starting at or before t
		return sort.Search(len(starts), func(i int) bool { return starts[i].After(t) }) - 1
	}
	name, lo, hi := bucketMinutes, minuteKey(starts[0]), minuteKey(to)
	keyTime := minuteTime
	switch step {
	case time.Hour:
		name, lo, hi = bucketHours, hourKey(starts[0]), hourKey(to)
		keyTime = hourTime
	case 24 * time.Hour:
		loc := s.loc
		name, lo, hi = bucketDays, dayKey(starts[0], loc), dayKey(to, loc)
		keyTime = func(k []byte) time.Time { return dayStart(k, loc) }
	}
	// Steps of several minutes merge their minutes' sketches; a minute
	// step and the hours and days hold their own visitors.
	merge := step != time.Minute && bytes.Equal(name, bucketMinutes)
	var u union
	at := -1 // the step u holds the sketches of
	flush := func() error {
		n, ok, err := u.estimate()
		if ok {
			out.Points[at].Visitors = n
			out.Approximate = true
		}
		return err
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if t, ok := s.keptFromStep(tx, step); ok {
			out.KeptFrom = t
		}
		c := s.bucket(tx, name).Cursor()
		for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) <= 0; k, v = c.Next() {
			var r record
			sk, err := r.decodeCounts(v)
			if err != nil {
				return fmt.Errorf("key %x: %w", k, err)
			}
			i := index(keyTime(k))
			if i < 0 {
				continue
			}
			p := &out.Points[i]
			p.Requests += r.Requests
			p.PageViews += r.PageViews
			p.Bytes += r.Bytes
			for c, n := range r.Status {
				p.Status[c] += n
			}
			out.Approximate = out.Approximate || r.Approximate
			if !merge {
				p.Visitors += r.Visitors
				continue
			}
			if i != at && at >= 0 {
				if err := flush(); err != nil {
					return fmt.Errorf("key %x: %w", k, err)
				}
			}
			at = i
			if len(sk) > 0 {
				if err := u.add(sk); err != nil {
					return fmt.Errorf("key %x: %w", k, err)
				}
			}
		}
		if at >= 0 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return logtally.Series{Step: step}, err
	}
	return out, nil
}

// PathCounts returns the stored page views of each path on the day that
// contains day (in the store's zone), and all-time: the shards plus what the
// path log holds for them.
func (s *Site) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	out := make([]logtally.PathCount, len(paths))
	for i, p := range paths {
		out[i].Path = p
	}
	dk := dayKey(day, s.loc)
	var floor uint32
	// The path log's counts are paired with the file the transaction sees;
	// if they have moved past it, a newer transaction is opened.
	var tx *bolt.Tx
	var folded uint32
	for {
		var err error
		if tx, err = s.db.Begin(false); err != nil {
			return nil, err
		}
		folded = uint32Key(s.bucket(tx, bucketCounters).Get(keyFolded))
		floor = s.floors(tx).dayPaths
		inStep := s.log.counts(tx.ID(), paths, func(i int, d uint32, n int64) {
			if d >= floor || d <= folded { // as compaction will count it
				out[i].Total += n
			}
			if d == uint32Key(dk) && d >= floor {
				out[i].Day += n
			}
		})
		if inStep {
			break
		}
		tx.Rollback()
	}
	defer tx.Rollback()

	pb, dpb := s.bucket(tx, bucketPaths), s.bucket(tx, bucketDayPaths)
	// Days not folded into the all-time shards yet; usually today alone.
	var unfolded [][]byte
	c := dpb.Cursor()
	start := []byte{}
	if folded != 0 {
		start = dayBytes(folded + 1)
	}
	for k, _ := c.Seek(start); k != nil; k, _ = c.Seek(nextDayKey(k)) {
		unfolded = append(unfolded, bytes.Clone(k[:4]))
	}
	for i, p := range paths {
		n, err := lookupShard(pb, allTimePrefix, p)
		if err != nil {
			return nil, err
		}
		out[i].Total += n
		for _, d := range unfolded {
			n, err := lookupShard(dpb, d, p)
			if err != nil {
				return nil, err
			}
			out[i].Total += n
		}
		n, err = lookupShard(dpb, dk, p)
		if err != nil {
			return nil, err
		}
		out[i].Day += n
	}
	return out, nil
}

// WindowSeconds returns the stored live-window seconds in [from, to].
func (s *Site) WindowSeconds(from, to int64) ([]logtally.Second, error) {
	var out []logtally.Second
	err := s.db.View(func(tx *bolt.Tx) error {
		c := s.bucket(tx, bucketSeconds).Cursor()
		hi := u64(uint64(to))
		for k, v := c.Seek(u64(uint64(from))); k != nil && bytes.Compare(k, hi) <= 0; k, v = c.Next() {
			var sec second
			if err := sec.decode(v); err != nil {
				return fmt.Errorf("second %x: %w", k, err)
			}
			out = append(out, logtally.Second{Time: int64(uint64Key(k)), Requests: sec.Requests,
				PageViews: sec.PageViews, Visitors: sec.Visitors, Paths: sec.Paths, PathVisitors: sec.Pairs})
		}
		return nil
	})
	return out, err
}

// MinuteVisitors returns the exact visitor set stored for a minute, if it is
// still kept.
func (s *Site) MinuteVisitors(minute time.Time) (set []uint64, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := s.bucket(tx, bucketVisitors).Get(minuteKey(minute))
		if v == nil {
			return nil
		}
		set, err = decodeHashes(v)
		ok = err == nil
		return err
	})
	return set, ok, err
}
