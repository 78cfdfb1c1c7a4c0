package storage

import (
	"bytes"
	"slices"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Pages returns the limit most viewed paths of [from, to], taken to the
// minute: from's minute to to's minute, both included. The whole days of
// the range (in the store's zone) come from their per-day path counts,
// which are exact for every path a day admitted (past its cap, the rest is
// counted in Other, and the range is not exact); the rest of the range comes from its minutes, which
// are exact for the pages each kept (--minute-top-pages), the rest of their
// page views being counted in Other. Exact says whether everything was.
// Whatever lies before the kept history of either source is left out, and
// KeptFrom says where that history starts.
func (s *Site) Pages(from, to time.Time, limit int) (logtally.PageRange, error) {
	lo, hi := from.Truncate(time.Minute), to.Truncate(time.Minute).Add(time.Minute) // [lo, hi)
	days := s.wholeDays(lo, hi)
	out := logtally.PageRange{Exact: true}
	counts := make(map[string]int64)
	err := s.pathsView(func(tx *bolt.Tx) bool {
		clear(counts)
		floor := s.daysFrom(tx)
		return s.log.dayCounts(tx.ID(), func(day uint32) bool {
			return slices.Contains(days, day) && day >= floor
		}, func(path string, n int64) { counts[path] += n })
	}, func(tx *bolt.Tx) error {
		if err := s.addDays(tx, days, counts, &out); err != nil {
			return err
		}
		return s.addMinutes(tx, lo, hi, days, counts, &out)
	})
	if err != nil {
		return out, err
	}
	// A day's page views past its cap are its OtherPath's: the range's
	// Other, not a page.
	out.Other += counts[logtally.OtherPath]
	delete(counts, logtally.OtherPath)
	out.Exact = out.Exact && out.Other == 0 && len(out.Damaged) == 0
	out.Pages = make([]logtally.PageCount, 0, len(counts))
	for p, n := range counts {
		out.Pages = append(out.Pages, logtally.PageCount{Path: p, PageViews: n})
	}
	slices.SortFunc(out.Pages, byViews)
	out.Pages = out.Pages[:min(limit, len(out.Pages))]
	return out, nil
}

// addDays adds the page views per path of the whole days days, from their
// shards, to counts; out says from when they are kept.
func (s *Site) addDays(tx *bolt.Tx, days []uint32, counts map[string]int64, out *logtally.PageRange) error {
	floor := s.daysFrom(tx)
	dpb := s.bucket(tx, bucketDayPaths)
	for _, day := range days {
		if day < floor {
			cutAt(out, s.dayTime(dayBytes(floor)))
			continue
		}
		addDayPaths(dpb, day, counts, s.skipInto(bucketDayPaths, &out.Damaged))
	}
	return nil
}

// addMinutes adds the page views per path of [lo, hi) but the whole days
// days, from their minutes, to counts, and those the minutes count as
// Other to out.
func (s *Site) addMinutes(tx *bolt.Tx, lo, hi time.Time, days []uint32, counts map[string]int64, out *logtally.PageRange) error {
	minutesFrom, held := s.keptFromStep(tx, time.Minute)
	parts := [][2]time.Time{{lo, hi}}
	if len(days) > 0 {
		parts = [][2]time.Time{{lo, s.dayTime(dayBytes(days[0]))}, {s.nextDay(days[len(days)-1]), hi}}
	}
	mb := s.bucket(tx, bucketMinutes)
	for _, p := range parts {
		start, end := p[0], p[1]
		if !start.Before(end) {
			continue
		}
		if held && start.Before(minutesFrom) {
			cutAt(out, minutesFrom)
			start = minutesFrom
		}
		err := scan(mb, minuteKey(start), minuteKey(end.Add(-time.Minute)), false, func(_ []byte, r *record) {
			for _, pc := range r.Top {
				counts[pc.Path] += pc.PageViews
			}
			out.Other += r.Other
		}, s.skipInto(bucketMinutes, &out.Damaged))
		if err != nil {
			return err
		}
	}
	return nil
}

// cutAt says that out lacks what lies before from, pruned by the
// retention.
func cutAt(out *logtally.PageRange, from time.Time) {
	out.Exact = false
	if from.After(out.KeptFrom) {
		out.KeptFrom = from
	}
}

// wholeDays returns the days (yyyymmdd in the store's zone) that lie
// whole in [lo, hi).
func (s *Site) wholeDays(lo, hi time.Time) []uint32 {
	y, m, d := lo.In(s.loc).Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, s.loc)
	if day.Before(lo) {
		day = time.Date(y, m, d+1, 0, 0, 0, 0, s.loc)
	}
	var out []uint32
	for {
		y, m, d := day.Date()
		next := time.Date(y, m, d+1, 0, 0, 0, 0, s.loc)
		if next.After(hi) {
			return out
		}
		out = append(out, uint32Key(dayKey(day, s.loc)))
		day = next
	}
}

// nextDay is the start of the day after day (yyyymmdd).
func (s *Site) nextDay(day uint32) time.Time {
	y, m, d := s.dayTime(dayBytes(day)).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, s.loc)
}

// daysFrom is the first day (yyyymmdd) whose per-day path counts are kept:
// the hour retention's, or later if a shorter one pruned them.
func (s *Site) daysFrom(tx *bolt.Tx) uint32 {
	floor := s.floors(tx).dayPaths
	if kept := s.keptFrom(tx)[1]; kept > 0 {
		// kept is the start of the hour that held the floor when a
		// shorter span was in force; its day was the floor of the page
		// counts, whole.
		floor = max(floor, uint32Key(dayKey(time.Unix(kept+3599, 0), s.loc)))
	}
	return floor
}

// addDayPaths adds every path count of a day's shards to counts; a shard
// that cannot be decoded is passed to skip, and counts nothing.
func addDayPaths(dpb *bolt.Bucket, day uint32, counts map[string]int64, skip func(k []byte, err error)) {
	prefix := dayBytes(day)
	c := dpb.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		entries, err := decodeShard(v)
		if err != nil {
			skip(k, err)
			continue
		}
		for _, e := range entries {
			counts[e.Path] += e.PageViews
		}
	}
}

// pathsView runs fn in a read transaction whose file the path log's
// counts are in step with, under guarded: inStep is called with a new
// transaction until it reports that they were (see pathLog.counts).
func (s *Site) pathsView(inStep func(tx *bolt.Tx) bool, fn func(tx *bolt.Tx) error) error {
	return s.st.guarded(func() error {
		for {
			if again, err := s.pathsTry(inStep, fn); !again {
				return err
			}
		}
	})
}

// pathsTry is one try of pathsView: it runs fn in a new read transaction
// if inStep reports the counts in step with it, and reports whether they
// were not. The transaction is rolled back whatever happens, a panic
// included: one left open would keep bbolt from growing the file.
func (s *Site) pathsTry(inStep func(tx *bolt.Tx) bool, fn func(tx *bolt.Tx) error) (again bool, err error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if !inStep(tx) {
		return true, nil
	}
	return false, fn(tx)
}

// Totals returns the counts of the whole days from the day of from to the
// day of to (in the store's zone). Its visitors are the sum of the days'
// visitors: a visitor is an address within one day, hashed with that
// day's key (see package keyring), so one who came on several days counts
// once a day, and nothing can tell that it was one person. A damaged day
// is left out, as Series(24h) leaves it out, which names it.
func (s *Site) Totals(from, to time.Time) (logtally.Counts, error) {
	var total logtally.Counts
	add := func(_ []byte, r *record) {
		total.Requests += r.Requests
		total.PageViews += r.PageViews
		total.Bytes += r.Bytes
		total.Rejected += r.Rejected
		for c, n := range r.Status {
			total.Status[c] += n
		}
		total.Visitors += r.Visitors
		total.Approximate = total.Approximate || r.Visitors > 0
	}
	lo, hi := dayKey(from, s.loc), dayKey(to, s.loc)
	err := s.st.view(func(tx *bolt.Tx) error {
		err := scan(s.bucket(tx, bucketDays), lo, hi, false, add, func(k []byte, err error) { s.damaged(bucketDays, k, err) })
		// The lazy days, made from their hours (see lazyday.go).
		s.lazyDays(tx, lo, hi, func(day, v []byte) {
			var r record
			if err := r.decode(v, false); err == nil {
				add(day, &r)
			}
		}, func(_, hour []byte, err error) { s.damaged(bucketHours, hour, err) })
		return err
	})
	return total, err
}

// Newest returns the start of the minute of the newest line stored, and
// whether there is one.
func (s *Site) Newest() (t time.Time, ok bool, err error) {
	err = s.st.view(func(tx *bolt.Tx) error {
		var n int64
		n, ok = s.newest(tx)
		t = time.Unix(n, 0).UTC()
		return nil
	})
	return t, ok, err
}

// Location returns the zone that the site's days follow: the store's.
func (s *Site) Location() *time.Location { return s.loc }
