package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A site's newest day is kept as its hours alone, not as a record of its
// own: a day's record is the sum of its hours' counts and the union of
// their sketches, so while the hours hold the day whole, the record only
// repeats them. Storing it meant that every commit gathered the day's
// visitors, and read, merged and wrote again its sketch (up to 16 KiB)
// beside the hour's, and with many sites, each its own: with 100 sites, a
// twentieth of a replay's CPU and an eighth of its file, which is as large
// as the most those rewrites ever held at once.
//
// A day is lazy, kept as its hours alone, where its bounds in the zone
// are whole UTC hours (days of a zone half an hour off UTC are stored as
// before, see dayAligned) and every hour of it is kept (its first hour is
// not before the hour floor of the retention). The site's counter
// keyLazyFrom is the first day that may be lazy: every day before it has
// its record, or none because it has no lines or was past the retention
// of days when they came. Readers (Series with a step of a day, Totals)
// make the record of a lazy day from its hours as they read it, the bytes
// that storing it would have stored (TestLazyDayIsTheStoredDay). A prune
// stores the record of each lazy day before the day of the newest line,
// and of any whose first hour it is about to delete, before it deletes
// (storeLazyDays); a commit stores it, from the hours before its own
// lines, when it brings lines to a lazy day whose first hour is no longer
// kept (endLazyDays), and merges them into it as before.

// keyLazyFrom is in counters: the first day (yyyymmdd) that may be kept
// as its hours alone, absent where none is.
var keyLazyFrom = []byte("lazyfrom")

// dayBounds returns the first instant of day (its key) in loc and the
// first of the day after.
func dayBounds(day []byte, loc *time.Location) (start, end time.Time) {
	v := int(uint32Key(day))
	next := time.Date(v/10000, time.Month(v/100%100), v%100+1, 12, 0, 0, 0, time.UTC)
	return firstOf(uint32Key(day), loc), firstOf(uint32Key(dayKey(next, time.UTC)), loc)
}

// firstOf returns the first instant whose dayKey in loc is day or later:
// found by a search around dayStart, since time.Date may answer for a
// midnight that does not exist (an offset that changes at 00:00) with an
// instant of the day before.
func firstOf(day uint32, loc *time.Location) time.Time {
	g := dayStart(dayBytes(day), loc).Unix()
	in := func(t int64) bool {
		y, m, d := time.Unix(t, 0).In(loc).Date()
		return uint32(y*10000+int(m)*100+d) >= day // dayKey's number
	}
	if in(g) && !in(g-1) {
		return time.Unix(g, 0) // midnight, as almost every day starts
	}
	lo, hi := g-6*3600, g+6*3600 // before the day, and in it or after
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if in(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return time.Unix(hi, 0)
}

// dayAligned reports whether day (its key) may be lazy at all: the store
// keeps lazy days, and the day starts and ends on whole UTC hours in its
// zone, so that its hours hold it whole. A commit prepares no record for
// such a day (see prepareRun): it gathers one only for a day it merges
// into a stored record (gatherDay).
func (s *Store) dayAligned(day []byte) bool {
	_, ok := s.alignedStart(day)
	return ok
}

// alignedStart returns the first hour (unix hour) of day, and whether the
// day is aligned (see dayAligned).
func (s *Store) alignedStart(day []byte) (int64, bool) {
	if s.eagerDays {
		return 0, false
	}
	start, end := dayBounds(day, s.loc)
	return start.Unix() / 3600, start.Unix()%3600 == 0 && end.Unix()%3600 == 0
}

// lazyDay reports whether day (its key) may be kept as its hours alone,
// as of the floors f: it is aligned, and its first hour is kept.
func (s *Site) lazyDay(day []byte, f floors) bool {
	hour, ok := s.st.alignedStart(day)
	return ok && hour >= f.hour
}

// lazyFrom returns the first day that may be lazy, 0 if none.
func (s *Site) lazyFrom(tx *bolt.Tx) uint32 {
	v := s.bucket(tx, bucketCounters).Get(keyLazyFrom)
	if len(v) != 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

// setLazyFrom stores the first day that may be lazy; 0 deletes it.
func (s *Site) setLazyFrom(tx *bolt.Tx, day uint32) error {
	counters := s.bucket(tx, bucketCounters)
	if day == 0 {
		return counters.Delete(keyLazyFrom)
	}
	return counters.Put(keyLazyFrom, dayBytes(day))
}

// dayFromHours returns the record of day made from its stored hours, and
// false if it has none. A damaged hour is an error, naming its key; with
// skip, it goes to skip instead and is left out, as a series of hours
// leaves it out.
func (s *Site) dayFromHours(tx *bolt.Tx, day []byte, skip func(k []byte, err error)) (*record, bool, error) {
	start, end := dayBounds(day, s.loc)
	lo, hi := hourKey(start), hourKey(end)
	var r record
	found := false
	c := s.bucket(tx, bucketHours).Cursor()
	for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, v = c.Next() {
		var h record
		err := h.decodeRollup(v)
		if err == nil {
			r.addTotals(h.Requests, h.PageViews, h.Bytes, h.Rejected, &h.Status)
			err = r.mergeSketch(&h)
		}
		switch {
		case err == nil:
			found = true
		case skip == nil:
			return nil, false, fmt.Errorf("hour %x: %w", k, err)
		default:
			skip(k, err)
		}
	}
	return &r, found, nil
}

// lazyValue returns the value that storing lazy day would store, and
// false if its hours hold nothing; skip is dayFromHours'.
func (s *Site) lazyValue(tx *bolt.Tx, day []byte, skip func(k []byte, err error)) ([]byte, bool, error) {
	r, ok, err := s.dayFromHours(tx, day, skip)
	if err != nil || !ok {
		return nil, false, err
	}
	v, err := r.encodeRollup()
	return v, err == nil, err
}

// materialize stores the record of day, if it has none, made from its
// hours.
func (s *Site) materialize(tx *bolt.Tx, day []byte) error {
	db := s.bucket(tx, bucketDays)
	if db.Get(day) != nil {
		return nil
	}
	v, ok, err := s.lazyValue(tx, day, nil)
	if err != nil || !ok {
		return err
	}
	db.FillPercent = 1
	return db.Put(day, v)
}

// lazyDays calls fn with the key and the value made from its hours of
// every lazy day in [lo, hi] (day keys) that has hours and no record, in
// order. A damaged hour goes to skip with its day, and is left out. A day
// off the hour is never lazy: one with no record has no lines of its own
// kept, though its first hour may hold the day before's last.
func (s *Site) lazyDays(tx *bolt.Tx, lo, hi []byte, fn func(day, v []byte), skip func(day, hour []byte, err error)) {
	first := s.lazyFrom(tx)
	if first == 0 {
		return
	}
	for day := range s.unstoredDays(tx, max(first, uint32Key(lo))) {
		if bytes.Compare(day, hi) > 0 {
			return
		}
		v, ok, err := s.lazyValue(tx, day, func(k []byte, err error) { skip(day, k, err) })
		if err == nil && ok {
			fn(day, v)
		}
	}
}

// unstoredDays yields, in order, each aligned day from first on that has
// hours and no record: from the first that may be lazy on, the days kept
// as their hours.
func (s *Site) unstoredDays(tx *bolt.Tx, first uint32) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		db := s.bucket(tx, bucketDays)
		c := s.bucket(tx, bucketHours).Cursor()
		var last []byte
		for k, _ := c.Seek(hourKey(firstOf(first, s.loc))); k != nil; k, _ = c.Next() {
			day := dayKey(hourTime(k), s.loc)
			if bytes.Equal(day, last) {
				continue
			}
			last = day
			if uint32Key(day) < first || db.Get(day) != nil || !s.st.dayAligned(day) {
				continue
			}
			if !yield(day) {
				return
			}
		}
	}
}

// dayRun is a day of a prepared batch: its key, and its minutes,
// minutes[lo:hi] of the batch's prepared minutes.
type dayRun struct {
	key    []byte
	lo, hi int
}

// minuteDays returns the days of a batch's prepared minutes, in order.
func minuteDays(ms []minutePrep) []dayRun {
	var out []dayRun
	for i := range ms {
		if n := len(out); n > 0 && string(out[n-1].key) == ms[i].day {
			out[n-1].hi = i + 1
			continue
		}
		out = append(out, dayRun{[]byte(ms[i].day), i, i + 1})
	}
	return out
}

// endLazyDays stores, from their hours, the days of a commit that were
// lazy and no longer may be, as of the floors f: before the commit adds
// its lines to their hours, since it merges its lines into their records
// (commitDays). A day off the hour was never lazy, and its hours hold
// lines of the days beside it. A lazy day past the retention of days is
// stored too: a
// stored day takes no more lines once past it, while its hours, kept
// longer, still do, and the day would read them until the prune deletes
// it. It returns the first day that may be lazy.
func (s *Site) endLazyDays(tx *bolt.Tx, days []dayRun, f floors) (uint32, error) {
	from := s.lazyFrom(tx)
	if from == 0 {
		return 0, nil
	}
	for _, d := range days {
		day := uint32Key(d.key)
		if hour, ok := s.st.alignedStart(d.key); ok && day >= from && (day < f.day || hour < f.hour) {
			if err := s.materialize(tx, d.key); err != nil {
				return 0, fmt.Errorf("day %x: %w", d.key, err)
			}
		}
	}
	return from, nil
}

// commitDays writes the days of a commit, p prepared and days its days,
// as of the floors f, the first lazy day lazyFrom before it: each day kept
// by the retention either stays its hours' (lazy, keyLazyFrom moved back
// to it if it is earlier) or is merged into its record. It returns the
// lines the days kept.
func (s *Site) commitDays(tx *bolt.Tx, p *prepared, days []dayRun, f floors, lazyFrom uint32) (int64, error) {
	db := s.bucket(tx, bucketDays)
	db.FillPercent = 1 // appended in order, as minutes
	from, kept := lazyFrom, int64(0)
	for _, d := range days {
		day := uint32Key(d.key)
		if day < f.day {
			continue
		}
		for _, m := range p.minutes[d.lo:d.hi] {
			kept += m.d.Requests
		}
		if db.Get(d.key) == nil && s.lazyDay(d.key, f) {
			if from == 0 || day < from {
				from = day
			}
			continue
		}
		r := p.days[string(d.key)]
		if r == nil { // aligned, so not prepared
			r = gatherDay(p.minutes[d.lo:d.hi])
		}
		if err := mergeRollup(db, d.key, r); err != nil {
			return kept, fmt.Errorf("day %x: %w", d.key, err)
		}
	}
	if from != lazyFrom {
		return kept, s.setLazyFrom(tx, from)
	}
	return kept, nil
}

// gatherDay returns the record of the day of minutes ms that prepareRun
// would have prepared.
func gatherDay(ms []minutePrep) *record {
	var r record
	for i := range ms {
		r.gather(ms[i].d)
	}
	r.seal()
	return &r
}

// lazyPlan is what a prune does with the lazy days of a site (see
// storeLazyTx).
type lazyPlan struct {
	store [][]byte // the days to store, in order
	next  uint32   // keyLazyFrom after them
	more  bool     // days beyond the budget wait for the next transaction
}

// planLazy returns what a prune does, as of the floors f, with at most
// budget of the lazy days of s: it stores each before the day of the
// newest line, and each whose first hour is no longer kept, which the
// prune is about to delete; the days it leaves lazy start at next.
func (s *Site) planLazy(tx *bolt.Tx, f floors, budget int) lazyPlan {
	from := s.lazyFrom(tx)
	t, ok := s.newest(tx)
	if from == 0 || !ok {
		return lazyPlan{}
	}
	newest := dayKey(time.Unix(t, 0), s.loc)
	var p lazyPlan
	// A lazy day before the floor of days is stored too: the prune then
	// deletes it, and says so, as it would have had it been stored all
	// along.
	for day := range s.unstoredDays(tx, from) {
		switch {
		case bytes.Compare(day, newest) >= 0 && s.lazyDay(day, f):
		case len(p.store) == budget:
			p.more = true
		default:
			p.store = append(p.store, day)
			continue
		}
		if p.next == 0 {
			p.next = uint32Key(day)
		}
		if p.more {
			break
		}
	}
	return p
}

// storeLazyTx carries out in tx the plan of planLazy for s, and returns
// how many days it stored and whether it is done with the site.
func (s *Site) storeLazyTx(tx *bolt.Tx, f floors, budget int) (n int, done bool, err error) {
	p := s.planLazy(tx, f, budget)
	for _, day := range p.store {
		if err := s.materialize(tx, day); err != nil {
			return 0, false, fmt.Errorf("day %x: %w", day, err)
		}
	}
	if p.next != s.lazyFrom(tx) {
		if err := s.setLazyFrom(tx, p.next); err != nil {
			return 0, false, err
		}
	}
	return len(p.store), !p.more, nil
}

// lazyWork reports whether a prune has anything to do with the lazy days
// of s, as of the floors f.
func (s *Site) lazyWork(tx *bolt.Tx, f floors) bool {
	p := s.planLazy(tx, f, 1)
	return len(p.store) > 0 || p.next != s.lazyFrom(tx)
}

// storeLazyDays stores the lazy days of sites that a prune stores (see
// storeLazyTx), each site's as of its floors in fs, up to maxFoldDays days
// a transaction, whichever sites they are of. A site that fails alone is
// recorded in fails.
func (s *Store) storeLazyDays(ctx context.Context, sites []*Site, fs []floors, fails failures) error {
	todo := make([]int, 0, len(sites))
	for i, si := range sites {
		if fails.failed(si) {
			continue
		}
		var work bool
		if err := s.view(func(tx *bolt.Tx) error { work = si.lazyWork(tx, fs[i]); return nil }); err != nil {
			fails.add(si, err)
		} else if work {
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		tried, finished := 0, 0 // of todo, in this transaction
		s.writeMu.Lock()
		err := s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
			tried, finished = 0, 0
			for budget := maxFoldDays; tried < len(todo) && budget > 0; {
				i := todo[tried]
				tried++
				n, done, err := sites[i].storeLazyTx(tx, fs[i], budget)
				if err != nil || !done {
					return nil, err // not done: the budget is spent
				}
				budget -= n
				finished = tried
			}
			return nil, nil
		})
		s.writeMu.Unlock()
		if err != nil {
			eachAlone(fails, todo[:tried], func(i int) *Site { return sites[i] }, func(i int) error {
				return s.storeLazyAlone(sites[i], fs[i])
			})
			finished = tried
		}
		todo = todo[finished:]
	}
	return nil
}

// storeLazyAlone is storeLazyDays of one site, in transactions of its own.
func (s *Store) storeLazyAlone(si *Site, f floors) error {
	for done := false; !done; {
		s.writeMu.Lock()
		err := s.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
			var err error
			_, done, err = si.storeLazyTx(tx, f, maxFoldDays)
			return nil, err
		})
		s.writeMu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
