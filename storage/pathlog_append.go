package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// logValueSize is about the size of the values a commit's log for a day
// is cut in.
const logValueSize = 16 << 10

// logEncoding is the version byte of a log value.
const logEncoding = 1

// pathDelta is a path's page views in a batch, by the batch's path number.
type pathDelta struct {
	id int32
	n  int64
}

// dayDelta is a batch's page views per path on one day.
type dayDelta struct {
	day   uint32
	paths []pathDelta
}

// logPaths appends a commit's page views per path and day (in day order) to
// the log, deciding which new paths each day admits. It compacts the whole
// log in the same transaction when the log is past a hard bound, or when
// late lines (of days already folded into the all-time totals, which only
// compaction adds them to) may reach the all-time cap: pending counts are
// final only while nothing is capped at compaction. Days before floor are
// past the retention of per-day page counts.
func (s *Site) logPaths(tx *bolt.Tx, b *tally.Batch, days []dayDelta, floor uint32) (*logChange, error) {
	l := s.log
	counters := s.bucket(tx, bucketCounters)
	lb := s.bucket(tx, bucketPathLog)
	folded := uint32Key(counters.Get(keyFolded))
	nb := &s.numbers
	nb.start(&l.dict, b.Paths())
	l.uses++
	ch := &logChange{}
	newCounts, lateCounts, newDays := 0, 0, 0
	for _, dd := range days {
		dayPart, late := dd.day >= floor, dd.day <= folded
		if !dayPart && !late {
			continue // expired and never folded: as before, not counted
		}
		pd := l.days[dd.day]
		if pd == nil {
			newDays++
		}
		sc, k := &s.st.scratch, len(dd.paths)
		d := loggedDay{day: dd.day, paths: carve(&sc.logPaths, k), slots: carve(&sc.logSlots, k), ids: carve(&sc.logIDs, k)}
		fresh := 0
		for i, pc := range dd.paths {
			d.paths[i] = logtally.PageCount{Path: nb.name(pc.id), PageViews: pc.n}
			d.slots[i], d.ids[i] = nb.lookup(pc.id), pc.id
			if !pd.has(d.slots[i]) && d.paths[i].Path != logtally.OtherPath {
				fresh++
			}
		}
		if dayPart {
			var err error
			if d, err = l.admit(counters, s.bucket(tx, bucketDayPaths), s.cfg.MaxDayPaths, d, pd, fresh, ch); err != nil {
				return nil, err
			}
		}
		for i, sl := range d.slots {
			if sl < 0 {
				d.slots[i] = nb.number(d.ids[i])
			}
			if !pd.has(d.slots[i]) {
				newCounts++
			}
		}
		if late {
			lateCounts += len(d.paths)
		}
		n, err := appendLog(lb, &s.st.scratch.values, d.day, d.paths)
		if err != nil {
			return nil, err
		}
		ch.bytes += n
		ch.days = append(ch.days, d)
	}
	ch.fresh = nb.fresh
	inline := l.bytes+ch.bytes > compactHardBytes || l.paths+newCounts > compactHardPaths ||
		l.dict.len()+len(ch.fresh) > compactHardPaths || len(l.days)+newDays > maxPendingDays
	if lateCounts > 0 && !inline {
		// Every late path may be new to the all-time totals.
		distinct := int(getUvarint(counters.Get(pathCounterKey(allTimePrefix))))
		for day, pd := range l.days {
			if day <= folded {
				distinct += pd.paths
			}
		}
		inline = distinct+lateCounts > s.cfg.MaxPaths
	}
	if inline {
		// The compaction merges this commit's paths too: none is numbered.
		c, err := s.compactTx(tx, ch)
		if err != nil {
			return nil, err
		}
		c.newHashes = ch.newHashes
		return c, nil
	}
	return ch, nil
}

// appendLog appends a day's page views per path to the log, cut in values
// of about logValueSize: version, then a path list (codec.go). It returns
// the bytes written.
func appendLog(lb *bolt.Bucket, a *arena, day uint32, paths []logtally.PageCount) (int64, error) {
	lb.FillPercent = 1 // appended in key order
	var total int64
	for len(paths) > 0 {
		size, n := 1+binary.MaxVarintLen64, 0
		for n < len(paths) && (n == 0 || size < logValueSize) {
			size += entrySize(paths[n].Path, paths[n].PageViews)
			n++
		}
		v := appendPathList(append(a.alloc(size), logEncoding), paths[:n])
		seq, err := lb.NextSequence()
		if err != nil {
			return 0, err
		}
		if err := lb.Put(logKey(day, seq), v); err != nil {
			return 0, err
		}
		total += int64(len(v))
		paths = paths[n:]
	}
	return total, nil
}

// decodeLog calls fn for each path of a log value. path is only valid
// during the call.
func decodeLog(v []byte, fn func(path []byte, n int64)) error {
	if len(v) == 0 || v[0] != logEncoding {
		return fmt.Errorf("path log version: %w", ErrCorrupt)
	}
	d := decoder{b: v[1:]}
	d.pathList(fn)
	if d.err != nil || len(d.b) != 0 {
		return fmt.Errorf("path log: %w", ErrCorrupt)
	}
	return nil
}
