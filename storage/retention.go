package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// Retention follows log time. Each resolution keeps a span measured back
// from the newest line stored (the start of its minute), not from the
// clock: a replay of last year's logs keeps their minutes, and a live
// daemon, whose newest line is now, prunes as a clock would. A line dated
// in the future cannot push the reference past the current time.
//
// The retention in force is stored in the database. A start that asks for
// a shorter span than the stored one keeps the stored one, and says what
// the shorter one would delete, unless Config.ApplyRetention; a longer span
// is taken at once, since it deletes nothing. What was pruned (or never
// stored) before a longer span took over stays missing: the store keeps,
// per resolution, the time from which it holds everything (keptFrom), so
// that an answer can tell a step it does not hold from a step with no
// traffic.

// Retention is how long each resolution of history is kept, back from the
// newest line stored. Forever keeps a resolution for ever.
type Retention struct {
	Minutes time.Duration // per-minute records
	Hours   time.Duration // hourly records and per-day page counts
	Days    time.Duration // daily records
}

func (r Retention) spans() [3]time.Duration { return [3]time.Duration{r.Minutes, r.Hours, r.Days} }

// resolutions names the resolutions in the order of Retention.spans, with
// the flag that sets each.
var resolutions = [3]struct{ name, flag string }{
	{"minutes", "--keep-minutes"}, {"hours", "--keep-hours"}, {"days", "--keep-days"},
}

func encodeRetention(r Retention) []byte {
	b := make([]byte, 0, 24)
	for _, d := range r.spans() {
		secs := uint64(0) // forever
		if d < Forever {
			secs = uint64(d / time.Second)
		}
		b = binary.BigEndian.AppendUint64(b, secs)
	}
	return b
}

func decodeRetention(b []byte) (Retention, error) {
	if len(b) != 24 {
		return Retention{}, fmt.Errorf("retention: %w", ErrCorrupt)
	}
	var d [3]time.Duration
	for i := range d {
		secs := binary.BigEndian.Uint64(b[8*i:])
		d[i] = Forever
		if secs != 0 {
			d[i] = time.Duration(secs) * time.Second
		}
	}
	return Retention{Minutes: d[0], Hours: d[1], Days: d[2]}, nil
}

// Held is a span the command line asked to shorten, that the store kept
// because shortening it would delete data: what it would delete.
type Held struct {
	Site     string        // the site whose history it is
	What     string        // minutes, hours, days, or "per-day page counts"
	Flag     string        // the flag that asked for it
	Asked    time.Duration // the span asked for
	Kept     time.Duration // the span in force, stored
	Count    int           // minutes, hours or days that the span asked for would delete
	From, To time.Time     // the first and last of them
}

// settleRetention decides the retention in force from the stored one and
// the one asked for, and stores it: a longer span is taken, a shorter one
// only with ApplyRetention. It records what it held back in s.held, and,
// when a span grows, from when each site holds everything of it.
func (s *Store) settleRetention(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	asked := Retention{Minutes: s.cfg.MinuteRetention, Hours: s.cfg.HourRetention, Days: s.cfg.DayRetention}
	stored := asked
	if v := meta.Get(keyRetention); v != nil {
		var err error
		if stored, err = decodeRetention(v); err != nil {
			return err
		}
	}
	a, st := asked.spans(), stored.spans()
	force := st
	var held [3]bool
	for i := range force {
		switch {
		case a[i] > st[i]:
			force[i] = a[i]
		case a[i] < st[i] && s.cfg.ApplyRetention:
			force[i] = a[i]
		case a[i] < st[i]:
			held[i] = true
		}
	}
	var heldBy [3][]Held // what each resolution held back would delete, site by site
	for _, si := range s.siteList() {
		ref, ok := si.reference(tx)
		kept := si.keptFrom(tx)
		for i := range force {
			if a[i] > st[i] {
				// Growing: what the shorter span pruned stays missing.
				if t := si.floorTime(floorsAt(ref, st[i], s.loc), i); ok && t > 0 {
					kept[i] = max(kept[i], t)
				}
			}
			if held[i] {
				heldBy[i] = append(heldBy[i], si.wouldDelete(tx, i, a[i], st[i], ref, ok)...)
			}
		}
		if err := si.bucket(tx, bucketCounters).Put(keyKeptFrom, encodeKeptFrom(kept)); err != nil {
			return err
		}
	}
	for _, hs := range heldBy {
		s.held = append(s.held, heldSites(hs)...)
	}
	s.cfg.MinuteRetention, s.cfg.HourRetention, s.cfg.DayRetention = force[0], force[1], force[2]
	in := Retention{Minutes: force[0], Hours: force[1], Days: force[2]}
	return meta.Put(keyRetention, encodeRetention(in))
}

// heldSites keeps, of what one resolution held back would delete site by
// site, the sites it would delete something of; or, if none, the default
// site's, so that the span held is still said.
func heldSites(hs []Held) []Held {
	var out []Held
	for _, h := range hs {
		if h.Count > 0 {
			out = append(out, h)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, h := range hs {
		if h.Site == logtally.DefaultSite {
			out = append(out, h)
		}
	}
	return out
}

// wouldDelete says what shortening resolution i from span kept to span
// asked would delete, as of the reference ref.
func (s *Site) wouldDelete(tx *bolt.Tx, i int, asked, kept time.Duration, ref int64, ok bool) []Held {
	h := Held{Site: s.name, What: resolutions[i].name, Flag: resolutions[i].flag, Asked: asked, Kept: kept}
	if !ok {
		return []Held{h}
	}
	lo, hi := floorsAt(ref, kept, s.loc), floorsAt(ref, asked, s.loc)
	var out []Held
	count := func(what string, name, lo, hi []byte, unit func(k []byte) time.Time, prefix int) {
		h := h
		h.What = what
		c := s.bucket(tx, name).Cursor()
		var last []byte
		for k, _ := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, _ = c.Next() {
			if last != nil && bytes.Equal(k[:prefix], last[:prefix]) {
				continue
			}
			h.add(unit(k))
			last = k
		}
		out = append(out, h)
	}
	switch i {
	case 0:
		count("minutes", bucketMinutes, u64(uint64(lo.minute)), u64(uint64(hi.minute)), minuteTime, 8)
	case 1:
		count("hours", bucketHours, u64(uint64(lo.hour)), u64(uint64(hi.hour)), hourTime, 8)
		count("per-day page counts", bucketDayPaths, dayBytes(lo.dayPaths), dayBytes(hi.dayPaths), s.dayTime, 4)
	case 2:
		count("days", bucketDays, dayBytes(lo.day), dayBytes(hi.day), s.dayTime, 4)
		s.heldLazyDays(tx, &out[len(out)-1], lo.day, hi.day)
	}
	return out
}

// heldLazyDays adds to h the lazy days in [lo, hi) (see lazyday.go): they
// have no record yet, and a prune would store them, then delete them.
func (s *Site) heldLazyDays(tx *bolt.Tx, h *Held, lo, hi uint32) {
	if hi == 0 {
		return
	}
	// lazyDays takes its last day: hi-1 sorts just before hi, a date or not.
	// A day is counted once, by fn; its damaged hours, which skip names,
	// are left out of it.
	s.lazyDays(tx, dayBytes(lo), dayBytes(hi-1), func(day, _ []byte) { h.add(s.dayTime(day)) },
		func(_, _ []byte, _ error) {})
}

// add counts one more minute, hour or day, at t, in what h would delete.
func (h *Held) add(t time.Time) {
	if h.Count == 0 || t.Before(h.From) {
		h.From = t
	}
	if h.Count == 0 || t.After(h.To) {
		h.To = t
	}
	h.Count++
}

// Held returns what the retention asked for at Open would delete and the
// store kept instead (see Config.ApplyRetention).
func (s *Store) Held() []Held { return s.held }

// LogRetention logs, once at start, each span the store kept longer than
// asked, with what the shorter one would delete and how to apply it.
func (s *Store) LogRetention(log *slog.Logger) {
	for _, h := range s.held {
		would := "nothing yet"
		if h.Count > 0 {
			would = fmt.Sprintf("%d %s, %s to %s", h.Count, h.What, h.From.Format(time.RFC3339), h.To.Format(time.RFC3339))
		}
		log.Warn("retention kept longer than asked: the stored one is in force", append(siteAttr(h.Site), "flag", h.Flag,
			"asked", FormatSpan(h.Asked), "in_force", FormatSpan(h.Kept), "what", h.What, "would_delete", would,
			"fix", "start with --apply-retention to delete them, or with "+h.Flag+" "+FormatSpan(h.Kept)+" to keep them")...)
	}
}

// Retention returns the retention in force.
func (s *Store) Retention() Retention {
	return Retention{Minutes: s.cfg.MinuteRetention, Hours: s.cfg.HourRetention, Days: s.cfg.DayRetention}
}

// newest returns the start of the newest minute with a line, unix seconds,
// and whether there is one. A file from before it was recorded falls back
// to the newest stored minute, then hour.
func (s *Site) newest(tx *bolt.Tx) (int64, bool) {
	if v := s.bucket(tx, bucketCounters).Get(keyNewest); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v)), true
	}
	if k, _ := s.bucket(tx, bucketMinutes).Cursor().Last(); k != nil {
		return minuteTime(k).Unix(), true
	}
	if k, _ := s.bucket(tx, bucketHours).Cursor().Last(); k != nil {
		return hourTime(k).Unix(), true
	}
	return 0, false
}

// reference is the time retention counts back from: the newest line's
// minute, but never past the clock.
func (s *Site) reference(tx *bolt.Tx) (int64, bool) {
	t, ok := s.newest(tx)
	return min(t, s.st.now().Unix()), ok
}

// advance moves the stored newest minute to minute (unix minute) if it is
// later.
func (s *Site) advance(tx *bolt.Tx, minute int64) error {
	if t, ok := s.newest(tx); ok && t >= minute*60 {
		return nil
	}
	return s.bucket(tx, bucketCounters).Put(keyNewest, u64(uint64(minute*60)))
}

// keptFrom returns, for minutes, hours and days, the unix second before
// which a span that grew finds what a shorter one pruned (0: none).
func (s *Site) keptFrom(tx *bolt.Tx) [3]int64 {
	var out [3]int64
	if v := s.bucket(tx, bucketCounters).Get(keyKeptFrom); len(v) == 24 {
		for i := range out {
			out[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
		}
	}
	return out
}

// encodeKeptFrom encodes keptFrom's value: 3 x uint64 unix seconds.
func encodeKeptFrom(kept [3]int64) []byte {
	b := make([]byte, 0, 24)
	for _, t := range kept {
		b = binary.BigEndian.AppendUint64(b, uint64(t))
	}
	return b
}

// floors are the oldest minute, hour and days that retention keeps; older
// ones are expired. Zero means none is.
type floors struct {
	minute, hour  int64  // unix minute, unix hour
	day, dayPaths uint32 // yyyymmdd of days, and of per-day page counts
}

// floorsAt are the floors of one span for every resolution, as of ref.
func floorsAt(ref int64, span time.Duration, loc *time.Location) floors {
	return retentionFloors(ref, true, Retention{span, span, span}, loc)
}

// retentionFloors are the floors of a retention as of ref; none if !ok
// (nothing stored).
func retentionFloors(ref int64, ok bool, r Retention, loc *time.Location) floors {
	var f floors
	if !ok {
		return f
	}
	if t, ok := since(ref, r.Minutes); ok {
		f.minute = logtally.FloorDiv(t, 60)
	}
	if t, ok := since(ref, r.Hours); ok {
		f.hour = logtally.FloorDiv(t, 3600)
		f.dayPaths = uint32Key(dayKey(time.Unix(t, 0), loc))
	}
	if t, ok := since(ref, r.Days); ok {
		f.day = uint32Key(dayKey(time.Unix(t, 0), loc))
	}
	return f
}

// floorTime is the start of resolution i's floor (minutes, hours, days),
// unix seconds; 0 if there is none.
func (s *Site) floorTime(f floors, i int) int64 {
	switch {
	case i == 0:
		return f.minute * 60
	case i == 1:
		return f.hour * 3600
	case f.day == 0:
		return 0
	}
	return s.dayTime(dayBytes(f.day)).Unix()
}

// floors are the floors in force in tx.
func (s *Site) floors(tx *bolt.Tx) floors {
	ref, ok := s.reference(tx)
	return retentionFloors(ref, ok, s.st.Retention(), s.loc)
}

// upgradeRetention brings a file of schema version 2, which pruned by the
// clock and did not store its retention, to version 3: nothing is known of
// what it pruned, so each resolution is held whole only from its oldest
// record on.
func (s *Store) upgradeRetention(tx *bolt.Tx) error {
	for _, si := range s.siteList() {
		if err := si.upgradeRetention(tx); err != nil {
			return err
		}
	}
	return nil
}

// upgradeRetention is Store.upgradeRetention of one site.
func (s *Site) upgradeRetention(tx *bolt.Tx) error {
	var kept [3]int64
	for i, name := range [][]byte{bucketMinutes, bucketHours, bucketDays} {
		k, _ := s.bucket(tx, name).Cursor().First()
		switch {
		case k == nil:
		case i == 0:
			kept[i] = minuteTime(k).Unix()
		case i == 1:
			kept[i] = hourTime(k).Unix()
		default:
			kept[i] = s.dayTime(k).Unix()
		}
	}
	counters := s.bucket(tx, bucketCounters)
	if err := counters.Put(keyKeptFrom, encodeKeptFrom(kept)); err != nil {
		return err
	}
	if t, ok := s.newest(tx); ok {
		return counters.Put(keyNewest, u64(uint64(t)))
	}
	return nil
}

// KeptFrom returns, for a series step, the start of the first step from
// which history is held whole, and false when all of it is: steps before
// it were pruned, or never stored, under the retention.
func (s *Site) KeptFrom(step time.Duration) (t time.Time, ok bool, err error) {
	err = s.st.view(func(tx *bolt.Tx) error {
		t, ok = s.keptFromStep(tx, step)
		return nil
	})
	return t, ok, err
}

// keptFromStep is KeptFrom in tx.
func (s *Site) keptFromStep(tx *bolt.Tx, step time.Duration) (time.Time, bool) {
	f, kept := s.floors(tx), s.keptFrom(tx)
	i := 0 // minutes
	switch step {
	case time.Hour:
		i = 1
	case 24 * time.Hour:
		i = 2
	}
	from := max(s.floorTime(f, i), kept[i])
	if from <= 0 {
		return time.Time{}, false
	}
	return s.stepCeil(time.Unix(from, 0), step), true
}

// stepCeil is the start of the first step at or after t: days in the
// store's zone, shorter steps as Series starts them.
func (s *Site) stepCeil(t time.Time, step time.Duration) time.Time {
	if step == 24*time.Hour {
		y, m, d := t.In(s.loc).Date()
		start := time.Date(y, m, d, 0, 0, 0, 0, s.loc)
		if start.Before(t) {
			start = time.Date(y, m, d+1, 0, 0, 0, 0, s.loc)
		}
		return start
	}
	c := t.Truncate(step)
	if c.Before(t) {
		c = c.Add(step)
	}
	return c.UTC()
}
