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
	folded := uint32Key(counters.Get(keyFolded))
	s.numbers.start(&l.dict, b.Paths())
	l.uses++
	ch := &logChange{}
	var g logGrowth
	for _, dd := range days {
		dayPart, late := dd.day >= floor, dd.day <= folded
		if !dayPart && !late {
			continue // expired and never folded: as before, not counted
		}
		if err := s.logDay(tx, dd, dayPart, late, ch, &g); err != nil {
			return nil, err
		}
	}
	ch.fresh = s.numbers.fresh
	if !s.compactsInline(counters, ch, g, folded) {
		return ch, nil
	}
	// The compaction merges this commit's paths too: none is numbered.
	c, err := s.compactTx(tx, ch)
	if err != nil {
		return nil, err
	}
	c.newHashes = ch.newHashes
	return c, nil
}

// logGrowth is how a commit grows the log, which decides whether it
// compacts it in its own transaction.
type logGrowth struct {
	newCounts  int // (day, path) counts that the log does not hold yet
	lateCounts int // counts of days folded into the all-time totals already
	newDays    int // days that the log does not hold yet
}

// logDay appends a day's page views per path to the log and to ch, the
// paths the day admits if it keeps per-day page counts (dayPart), and adds
// to g how it grows the log.
func (s *Site) logDay(tx *bolt.Tx, dd dayDelta, dayPart, late bool, ch *logChange, g *logGrowth) error {
	l, nb := s.log, &s.numbers
	pd := l.days[dd.day]
	if pd == nil {
		g.newDays++
	}
	d, fresh := s.numbered(dd, pd)
	if dayPart {
		var err error
		d, err = l.admit(s.bucket(tx, bucketCounters), s.bucket(tx, bucketDayPaths), s.cfg.MaxDayPaths, d, pd, fresh, ch)
		if err != nil {
			return err
		}
	}
	for i, sl := range d.slots {
		if sl < 0 {
			d.slots[i] = nb.number(d.ids[i])
		}
		if !pd.has(d.slots[i]) {
			g.newCounts++
		}
	}
	if late {
		g.lateCounts += len(d.paths)
	}
	n, err := appendLog(s.bucket(tx, bucketPathLog), &s.st.scratch.values, d.day, d.paths)
	if err != nil {
		return err
	}
	ch.bytes += n
	ch.days = append(ch.days, d)
	return nil
}

// numbered returns a day's page views by path, each with its number in the
// dictionary (-1 if it has none yet), and how many of the paths other than
// logtally.OtherPath are not pending on the day (pd) yet.
func (s *Site) numbered(dd dayDelta, pd *pendingDay) (d loggedDay, fresh int) {
	sc, nb, k := &s.st.scratch, &s.numbers, len(dd.paths)
	d = loggedDay{day: dd.day, paths: carve(&sc.logPaths, k), slots: carve(&sc.logSlots, k), ids: carve(&sc.logIDs, k)}
	for i, pc := range dd.paths {
		d.paths[i] = logtally.PageCount{Path: nb.name(pc.id), PageViews: pc.n}
		d.slots[i], d.ids[i] = nb.lookup(pc.id), pc.id
		if !pd.has(d.slots[i]) && d.paths[i].Path != logtally.OtherPath {
			fresh++
		}
	}
	return d, fresh
}

// compactsInline reports whether the commit that changes the log by ch,
// growing it by g, compacts it in its own transaction: when the log would
// pass a hard bound, or when the late paths, each of which may be new to
// the all-time totals, may pass their cap.
func (s *Site) compactsInline(counters *bolt.Bucket, ch *logChange, g logGrowth, folded uint32) bool {
	l := s.log
	if l.bytes+ch.bytes > compactHardBytes || l.paths+g.newCounts > compactHardPaths ||
		l.dict.len()+len(ch.fresh) > compactHardPaths || len(l.days)+g.newDays > maxPendingDays {
		return true
	}
	if g.lateCounts == 0 {
		return false
	}
	distinct := int(getUvarint(counters.Get(pathCounterKey(allTimePrefix))))
	for day, pd := range l.days {
		if day <= folded {
			distinct += pd.paths
		}
	}
	return distinct+g.lateCounts > s.cfg.MaxPaths
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
