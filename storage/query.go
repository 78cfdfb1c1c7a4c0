package storage

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Minutes returns the stored minutes in [from, to], oldest first, but for
// those that are damaged (see Damage).
func (s *Site) Minutes(from, to time.Time) ([]logtally.Bucket, error) {
	var out []logtally.Bucket
	err := s.st.view(func(tx *bolt.Tx) error {
		return scan(s.bucket(tx, bucketMinutes), minuteKey(from), minuteKey(to), false,
			func(k []byte, r *record) {
				out = append(out, logtally.Bucket{Time: minuteTime(k), Counts: r.Counts})
			}, func(k []byte, err error) { s.damaged(bucketMinutes, k, err) })
	})
	return out, err
}

// scan decodes the records with keys in [lo, hi] in key order. A record
// that cannot be decoded is passed to skip, and the scan goes on; with a
// nil skip, it is an error.
func scan(b *bolt.Bucket, lo, hi []byte, withSketch bool, fn func(k []byte, r *record), skip func(k []byte, err error)) error {
	c := b.Cursor()
	for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) <= 0; k, v = c.Next() {
		var r record
		if err := r.decode(v, withSketch); err != nil {
			if skip == nil {
				return fmt.Errorf("key %x: %w", k, err)
			}
			skip(k, err)
			continue
		}
		fn(k, &r)
	}
	return nil
}

// damaged names a value of one of the site's buckets under key that cannot
// be decoded (err), as Check names it, and remembers it for Damage: a
// query skips it and says so, rather than fail whole.
func (s *Site) damaged(bucket, key []byte, err error) string {
	path := [][]byte{bucketSites, s.key, bucket}
	problem := describe(path) + ", " + keyName(bucketName(path), key) + ": " + err.Error()
	s.st.file.damage.note(problem)
	return problem
}

// skipInto returns a scan's skip that names each damaged record of bucket
// in *names.
func (s *Site) skipInto(bucket []byte, names *[]string) func(k []byte, err error) {
	return func(k []byte, err error) { *names = append(*names, s.damaged(bucket, k, err)) }
}

// Last returns the start of the newest stored minute, and whether there is one.
func (s *Site) Last() (t time.Time, ok bool, err error) {
	err = s.st.view(func(tx *bolt.Tx) error {
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
// says from which step on the retention holds everything. A damaged
// record is left out, its step marked Damaged and the record named in
// Damaged.
func (s *Site) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	out := logtally.Series{Step: step}
	if to.Before(from) {
		return out, nil
	}
	starts, err := s.seriesStarts(from, to, step)
	if err != nil {
		return out, err
	}
	out.Points = make([]logtally.Point, len(starts))
	for i, t := range starts {
		out.Points[i].Time = t.UTC()
	}
	src := s.seriesSource(step, starts[0], to)
	err = s.st.view(func(tx *bolt.Tx) error {
		if t, ok := s.keptFromStep(tx, step); ok {
			out.KeptFrom = t
		}
		err := src.fill(s.bucket(tx, src.bucket), starts, &out, func(k []byte, err error) {
			out.Damaged = append(out.Damaged, s.damaged(src.bucket, k, err))
		})
		if err == nil && bytes.Equal(src.bucket, bucketDays) {
			s.fillLazyDays(tx, src, starts, &out)
		}
		return err
	})
	if err != nil {
		return logtally.Series{Step: step}, err
	}
	return out, nil
}

// seriesStarts returns the start of every step of a series, at most
// logtally.MaxPoints of them: days in the store's zone, shorter steps
// truncated from the Unix epoch.
func (s *Site) seriesStarts(from, to time.Time, step time.Duration) ([]time.Time, error) {
	var starts []time.Time
	if step == 24*time.Hour {
		y, m, d := from.In(s.loc).Date()
		for t := time.Date(y, m, d, 0, 0, 0, 0, s.loc); !t.After(to); t = t.AddDate(0, 0, 1) {
			if len(starts) == logtally.MaxPoints {
				return nil, logtally.ErrTooManyPoints
			}
			starts = append(starts, t)
		}
		return starts, nil
	}
	if step <= 0 || step > time.Hour {
		return nil, fmt.Errorf("step %s: %w", step, logtally.ErrTooManyPoints)
	}
	first := from.Truncate(step)
	if n := to.Sub(first)/step + 1; n > logtally.MaxPoints {
		return nil, logtally.ErrTooManyPoints
	}
	for t := first; !t.After(to); t = t.Add(step) {
		starts = append(starts, t)
	}
	return starts, nil
}

// seriesSource is where the points of a series are read from.
type seriesSource struct {
	bucket  []byte // minutes, hours or days
	lo, hi  []byte // its keys in [lo, hi]
	keyTime func(k []byte) time.Time
	// merge says that a step holds several minutes, whose sketches it
	// merges; a minute step and the hours and days hold their own
	// visitors.
	merge bool
}

// seriesSource returns where a series of step from first to to is read.
func (s *Site) seriesSource(step time.Duration, first, to time.Time) seriesSource {
	switch step {
	case time.Hour:
		return seriesSource{bucket: bucketHours, lo: hourKey(first), hi: hourKey(to), keyTime: hourTime}
	case 24 * time.Hour:
		return seriesSource{bucket: bucketDays, lo: dayKey(first, s.loc), hi: dayKey(to, s.loc), keyTime: s.dayTime}
	}
	return seriesSource{bucket: bucketMinutes, lo: minuteKey(first), hi: minuteKey(to), keyTime: minuteTime,
		merge: step != time.Minute}
}

// fill adds the records of b in the source's range to the points of out,
// whose steps start at starts.
// A record that cannot be decoded is passed to skip, its point marked
// damaged.
func (src seriesSource) fill(b *bolt.Bucket, starts []time.Time, out *logtally.Series, skip func(k []byte, err error)) error {
	visitors := stepVisitors{at: -1}
	c := b.Cursor()
	for k, v := c.Seek(src.lo); k != nil && bytes.Compare(k, src.hi) <= 0; k, v = c.Next() {
		i := stepOf(starts, src.keyTime(k))
		var r record
		sk, err := r.decodeCounts(v)
		if err != nil {
			skip(k, err)
			if i >= 0 {
				out.Points[i].Damaged = true
			}
			continue
		}
		if i < 0 {
			continue
		}
		addCounts(out, i, &r)
		if !src.merge {
			out.Points[i].Visitors += r.Visitors
			continue
		}
		if err := visitors.add(out, i, sk, &r); err != nil {
			return fmt.Errorf("key %x: %w", k, err)
		}
	}
	return visitors.flush(out)
}

// stepOf returns the last step of starts that starts at or before t, -1
// if none does.
func stepOf(starts []time.Time, t time.Time) int {
	return sort.Search(len(starts), func(i int) bool { return starts[i].After(t) }) - 1
}

// addCounts adds a record's counts but its visitors to point i of out.
func addCounts(out *logtally.Series, i int, r *record) {
	p := &out.Points[i]
	p.Requests += r.Requests
	p.PageViews += r.PageViews
	p.Bytes += r.Bytes
	for c, n := range r.Status {
		p.Status[c] += n
	}
	out.Approximate = out.Approximate || r.Approximate
}

// fillLazyDays adds the site's lazy days in a series of days' range (see
// lazyday.go), each made from its hours, to the points of out. A day with
// a damaged hour is left out, its point marked damaged and the hour named.
func (s *Site) fillLazyDays(tx *bolt.Tx, src seriesSource, starts []time.Time, out *logtally.Series) {
	s.lazyDays(tx, src.lo, src.hi, func(day, v []byte) {
		var r record
		if _, err := r.decodeCounts(v); err != nil {
			return // encoded by encodeRollup just now
		}
		if i := stepOf(starts, s.dayTime(day)); i >= 0 {
			addCounts(out, i, &r)
			out.Points[i].Visitors += r.Visitors
		}
	}, func(day, hour []byte, err error) {
		out.Damaged = append(out.Damaged, s.damaged(bucketHours, hour, err))
		if i := stepOf(starts, s.dayTime(day)); i >= 0 {
			out.Points[i].Damaged = true
		}
	})
}

// stepVisitors merges the sketches of the minutes of a step, steps in
// order, to estimate each step's visitors.
type stepVisitors struct {
	u  union
	at int // the step u holds the sketches of; -1: none yet
}

// add adds a minute's sketch (its binary form, empty if it has none), or
// the visitor set that stands for it (r.set), to step i, estimating the
// visitors of the step before once i has moved past it.
func (sv *stepVisitors) add(out *logtally.Series, i int, sk []byte, r *record) error {
	if i != sv.at && sv.at >= 0 {
		if err := sv.flush(out); err != nil {
			return err
		}
	}
	sv.at = i
	switch {
	case r.set != nil:
		sv.u.addSet(r.set, r.denseSet)
	case len(sk) > 0:
		return sv.u.add(sk)
	}
	return nil
}

// flush sets the visitors of the step the sketches are of to their
// estimate.
func (sv *stepVisitors) flush(out *logtally.Series) error {
	if sv.at < 0 {
		return nil
	}
	n, ok, err := sv.u.estimate()
	if ok {
		out.Points[sv.at].Visitors = n
		out.Approximate = true
	}
	return err
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
	var folded uint32 // the last day folded into the all-time shards
	err := s.pathsView(func(tx *bolt.Tx) bool {
		folded = uint32Key(s.bucket(tx, bucketCounters).Get(keyFolded))
		return s.addPending(tx, paths, uint32Key(dk), folded, out)
	}, func(tx *bolt.Tx) error {
		return s.addShards(tx, paths, dk, folded, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// addPending adds to out what the path log holds of paths (by index), as
// compaction will count it, and reports whether the log's counts were in
// step with tx (see pathLog.counts).
func (s *Site) addPending(tx *bolt.Tx, paths []string, day, folded uint32, out []logtally.PathCount) bool {
	floor := s.floors(tx).dayPaths
	return s.log.counts(tx.ID(), paths, func(i int, d uint32, n int64) {
		if d >= floor || d <= folded {
			out[i].Total += n
		}
		if d == day && d >= floor {
			out[i].Day += n
		}
	})
}

// addShards adds to out the page views that the shards hold of paths (by
// index): all-time, on the days not folded into it yet, and on the day dk.
// A shard that cannot be decoded counts nothing, and marks the paths it
// holds Damaged.
func (s *Site) addShards(tx *bolt.Tx, paths []string, dk []byte, folded uint32, out []logtally.PathCount) error {
	pb, dpb := s.bucket(tx, bucketPaths), s.bucket(tx, bucketDayPaths)
	unfolded := unfoldedDays(dpb, folded)
	for i, p := range paths {
		look := func(b *bolt.Bucket, bucket, prefix []byte) int64 {
			n, err := lookupShard(b, prefix, p)
			if err != nil {
				s.damaged(bucket, shardKey(prefix, shardOf(p)), err)
				out[i].Damaged = true
			}
			return n
		}
		out[i].Total += look(pb, bucketPaths, allTimePrefix)
		for _, d := range unfolded {
			out[i].Total += look(dpb, bucketDayPaths, d)
		}
		out[i].Day += look(dpb, bucketDayPaths, dk)
	}
	return nil
}

// unfoldedDays returns the days with shards in dpb after folded, which are
// not in the all-time shards yet: usually today alone.
func unfoldedDays(dpb *bolt.Bucket, folded uint32) [][]byte {
	var days [][]byte
	c := dpb.Cursor()
	start := []byte{}
	if folded != 0 {
		start = dayBytes(folded + 1)
	}
	for k, _ := c.Seek(start); k != nil; k, _ = c.Seek(nextDayKey(k)) {
		days = append(days, bytes.Clone(k[:4]))
	}
	return days
}

// WindowSeconds returns the stored live-window seconds in [from, to], but
// for those that are damaged (see Damage).
func (s *Site) WindowSeconds(from, to int64) ([]logtally.Second, error) {
	var out []logtally.Second
	err := s.st.view(func(tx *bolt.Tx) error {
		c := s.bucket(tx, bucketSeconds).Cursor()
		hi := u64(uint64(to))
		for k, v := c.Seek(u64(uint64(from))); k != nil && bytes.Compare(k, hi) <= 0; k, v = c.Next() {
			var sec second
			if err := sec.decode(v); err != nil {
				s.damaged(bucketSeconds, k, err) // the window is restored without it
				continue
			}
			out = append(out, logtally.Second{Time: int64(uint64Key(k)), Requests: sec.Requests,
				PageViews: sec.PageViews, Visitors: sec.Visitors, Paths: sec.Paths, PathVisitors: sec.Pairs})
		}
		return nil
	})
	return out, err
}

// MinuteVisitors returns the exact visitor set stored for a minute, if it is
// still kept and not damaged (see Damage).
func (s *Site) MinuteVisitors(minute time.Time) (set []uint64, ok bool, err error) {
	key := minuteKey(minute)
	err = s.st.view(func(tx *bolt.Tx) error {
		bucket, v := bucketMinutes, s.bucket(tx, bucketMinutes).Get(key)
		if v == nil {
			return nil
		}
		var r record
		field, err := r.decodeCounts(v)
		if err == nil && r.set == nil {
			// A file of schema 5, opened read-only, or being upgraded,
			// keeps sets apart (see moveSets).
			vb := s.bucket(tx, bucketVisitors)
			if vb == nil {
				return nil
			}
			if bucket, field = bucketVisitors, vb.Get(key); field == nil {
				return nil
			}
		}
		if err == nil {
			set, err = decodeHashes(field)
		}
		if err != nil {
			s.damaged(bucket, key, err) // as if no longer kept
			return nil
		}
		ok = true
		return nil
	})
	return set, ok, err
}
