package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/axiomhq/hyperloglog"
	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Commit writes everything a batch holds in one transaction: minute, hour
// and day deltas, per-path counts (to the path log), the live window's
// seconds and the file positions, and with Config.Outbox the batch itself,
// numbered, for the fleet. On error nothing of the batch is stored
// and the batch is left as it was, so that it can be committed again.
//
// A minute, hour or day older than its retention, counted back from the
// newest line stored (this batch's included), is not written: its lines
// count in the coarser resolutions that keep them.
func (s *Store) Commit(b *logtally.Batch) error {
	now := s.now()
	var kept logtally.Kept
	entry, err := s.outbox.entry(b, now)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	sc := &s.scratch
	sc.pages.grow(len(b.Paths()))
	sc.day.grow(len(b.Paths()))
	defer sc.reset() // after an error, counts may be left in the tallies
	err = s.writeTx(func(tx *bolt.Tx) (*logChange, error) {
		hours := make(map[int64]*record)
		days := make(map[string]*record)
		var dayPaths []dayDelta

		var minutes []int64
		var deltas []*logtally.Delta
		for minute, d := range b.Minutes() {
			minutes, deltas = append(minutes, minute), append(deltas, d)
		}
		f, err := s.advanceFloors(tx, minutes, deltas)
		if err != nil {
			return nil, err
		}
		kept = logtally.Kept{}
		for i, minute := range minutes {
			d := deltas[i]
			prepare(d, sc)
			day := string(dayKey(unixMinute(minute), s.loc))
			rollup(hours, logtally.FloorDiv(minute, 60), d)
			rollup(days, day, d)
			for _, id := range d.Views {
				sc.pages.add(id, 1)
				sc.day.add(id, 1)
			}
			sc.top = sc.pages.take(b.Paths(), sc.top[:0])
			if len(sc.day.touched) > 0 &&
				(i == len(minutes)-1 || string(dayKey(unixMinute(minutes[i+1]), s.loc)) != day) {
				dayPaths = append(dayPaths, dayDelta{uint32Key([]byte(day)), sc.day.takeIDs(make([]pathDelta, 0, len(sc.day.touched)))})
			}
			if minute < f.minute {
				continue // its rollups are kept, the minute itself has expired
			}
			if err := s.commitMinute(tx, minute, d, sc.top); err != nil {
				return nil, err
			}
			kept.Minutes += d.Requests
		}
		hb := s.bucket(tx, bucketHours)
		for _, hour := range slices.Sorted(maps.Keys(hours)) {
			if hour < f.hour {
				continue
			}
			if err := mergeRollup(hb, u64(uint64(hour)), hours[hour]); err != nil {
				return nil, fmt.Errorf("hour %d: %w", hour, err)
			}
			kept.Hours += hours[hour].Requests
		}
		db := s.bucket(tx, bucketDays)
		for _, day := range slices.Sorted(maps.Keys(days)) {
			if uint32Key([]byte(day)) < f.day {
				continue
			}
			if err := mergeRollup(db, []byte(day), days[day]); err != nil {
				return nil, fmt.Errorf("day %x: %w", day, err)
			}
			kept.Days += days[day].Requests
		}
		if err := s.commitSeconds(tx, b); err != nil {
			return nil, err
		}
		ch, err := s.logPaths(tx, b, dayPaths, f.dayPaths)
		if err != nil {
			return nil, err
		}
		pb := tx.Bucket(bucketPositions)
		for file, off := range b.Positions() {
			if err := pb.Put([]byte(file), u64(uint64(off))); err != nil {
				return nil, err
			}
		}
		if entry != nil {
			if err := s.outbox.put(tx, entry); err != nil {
				return nil, err
			}
		}
		return ch, nil
	})
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	s.outbox.added(entry)
	if s.log.wantsCompaction() {
		s.log.askCompaction()
	}
	for minute := range b.Minutes() {
		s.touched[minute] = now
	}
	s.kept.Minutes, s.kept.Hours, s.kept.Days = s.kept.Minutes+kept.Minutes, s.kept.Hours+kept.Hours, s.kept.Days+kept.Days
	return nil
}

// advanceFloors moves the newest line stored to the newest of a batch's
// minutes with a request, and returns the retention floors that follow.
func (s *Store) advanceFloors(tx *bolt.Tx, minutes []int64, deltas []*logtally.Delta) (floors, error) {
	for i := len(minutes) - 1; i >= 0; i-- {
		if deltas[i].Requests > 0 {
			if err := s.advance(tx, minutes[i]); err != nil {
				return floors{}, err
			}
			break
		}
	}
	return s.floors(tx), nil
}

// Kept returns how many lines the commits since Open counted in minutes,
// hours and days.
func (s *Store) Kept() logtally.Kept {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.kept
}

// rollup adds a minute's delta to the hour or day record it belongs to.
func rollup[K comparable](m map[K]*record, k K, d *logtally.Delta) {
	r := m[k]
	if r == nil {
		r = &record{}
		m[k] = r
	}
	r.add(d)
	addDense(r, d.Visitors)
}

// denseFrom is the number of visitors from which a minute's sketch is kept
// dense: past it the dense form (8 KiB stored) is no larger than the sparse
// one, and inserting into the sparse form re-sorts it every few hundred
// hashes.
const denseFrom = 2048

// addVisitors adds visitor hashes to a minute's sketch, which has about
// known visitors already. Small minutes keep a compact sparse sketch.
func addVisitors(r *record, known int64, visitors []uint64) {
	if known+int64(len(visitors)) < denseFrom {
		sk := r.sketch()
		for _, v := range visitors {
			sk.InsertHash(v)
		}
		return
	}
	dense := hyperloglog.NewNoSparse()
	for _, v := range visitors {
		dense.InsertHash(v)
	}
	if r.hll != nil {
		dense.Merge(r.hll)
	}
	r.hll = dense
}

// addDense adds visitor hashes to an hour's or a day's sketch. Those are
// dense from the start: they are few, they grow past what sparse form holds,
// and the sparse form re-sorts itself every few hundred inserts.
func addDense(r *record, visitors []uint64) {
	if len(visitors) == 0 {
		return
	}
	if r.hll == nil {
		r.hll = hyperloglog.NewNoSparse()
	}
	for _, v := range visitors {
		r.hll.InsertHash(v)
	}
}

// mergeRollup merges a delta record into the stored hour or day at key.
// Rollup visitors always come from the merged sketch.
func mergeRollup(b *bolt.Bucket, key []byte, d *record) error {
	var r record
	if v := b.Get(key); v != nil {
		if err := r.decode(v, true); err != nil {
			return err
		}
	}
	r.addTotals(d.Requests, d.PageViews, d.Bytes, d.Rejected, &d.Status)
	if d.hll != nil {
		if err := r.sketch().Merge(d.hll); err != nil {
			return err
		}
	}
	if r.hll != nil {
		r.Visitors = int64(r.hll.Estimate())
	}
	r.Approximate = true
	v, err := r.encode()
	if err != nil {
		return err
	}
	return b.Put(key, v)
}

// commitMinute merges a delta into its stored minute; top is the delta's page
// views per path. The minute's visitor count stays exact while its visitor
// set is stored; once the set has been compacted away, new visitors can only
// go into the sketch and the count becomes the sketch's estimate.
func (s *Store) commitMinute(tx *bolt.Tx, minute int64, d *logtally.Delta, top []logtally.PageCount) error {
	mb, vb := s.bucket(tx, bucketMinutes), s.bucket(tx, bucketVisitors)
	key := u64(uint64(minute))
	var r record
	if v := mb.Get(key); v != nil {
		if err := r.decode(v, true); err != nil {
			return fmt.Errorf("minute %d: %w", minute, err)
		}
	}
	r.add(d)
	if len(d.Visitors) > 0 {
		addVisitors(&r, r.Visitors, d.Visitors)
		sk := r.hll
		stored := vb.Get(key)
		if !r.Approximate && (stored != nil || r.Visitors == 0) {
			set, n, err := mergeHashes(stored, d.Visitors)
			if err != nil {
				return fmt.Errorf("minute %d: %w", minute, err)
			}
			r.Visitors = int64(n)
			if err := vb.Put(key, set); err != nil {
				return err
			}
		} else {
			r.Approximate = true
			r.Visitors = int64(sk.Estimate())
		}
	}
	r.mergeTop(top, s.cfg.TopPages)
	v, err := r.encode()
	if err != nil {
		return err
	}
	mb.FillPercent = 0.9 // minutes are mostly appended in order
	return mb.Put(key, v)
}

func getUvarint(b []byte) uint64 {
	v, _ := binary.Uvarint(b)
	return v
}

// commitSeconds stores the live window's per-second state and drops the
// seconds that have left the window.
func (s *Store) commitSeconds(tx *bolt.Tx, b *logtally.Batch) error {
	sb := s.bucket(tx, bucketSeconds)
	sc := &s.scratch
	for sec, d := range b.Seconds() {
		if sec < b.WindowStart() {
			continue
		}
		prepare(d, sc)
		for _, id := range d.Views {
			sc.pages.add(id, 1)
		}
		sc.top = sc.pages.take(b.Paths(), sc.top[:0])
		key := u64(uint64(sec))
		var v []byte
		if old := sb.Get(key); old != nil {
			var o second
			if err := o.decode(old); err != nil {
				return fmt.Errorf("second %d: %w", sec, err)
			}
			o.merge(d, sc.top)
			v = o.encode(&sc.values)
		} else {
			v = encodeSecond(&sc.values, d.Requests, d.PageViews, d.Visitors, sc.top)
		}
		if err := sb.Put(key, v); err != nil {
			return err
		}
	}
	if b.WindowStart() <= 0 {
		return nil
	}
	var stale [][]byte
	c := sb.Cursor()
	end := u64(uint64(b.WindowStart()))
	for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0; k, _ = c.Next() {
		stale = append(stale, bytes.Clone(k))
	}
	for _, k := range stale {
		if err := sb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
