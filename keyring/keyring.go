// Package keyring owns the keys that visitors are hashed with: one key per
// day, the day of the log line in the zone days follow, so that a stored
// visitor hash can be tied back to an address only while its day's key
// exists.
//
// The one idea: a key is needed only until the last window or bucket that
// counts its day's visitors has closed, so a Ring destroys it then, and
// after that nobody, the operator included, can test guesses of addresses
// against the day's hashes. Keys come from one of two places. A node that
// counts alone draws a random key per day when its first line needs one
// and keeps it in a small file beside the database (see file.go), which
// retiring a key overwrites in place. A fleet's nodes, which must hash one
// visitor alike, derive each day's key from a secret that every node is
// given (see Secret), and store none.
//
// Time is the log lines', never the wall clock's: a day's key retires once
// a line later than the day's end plus Ring.keep has been committed.
package keyring

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Grace is how long a day's key outlives the last window that can hold
// the day's lines (the day's end plus the larger of --window and
// --max-skew): as long as a stored minute keeps its exact visitors
// (storage's default ExactVisitorsSpan), so that a line that late still
// finds its minute's visitors hashed with the same key.
const Grace = 2 * time.Hour

// Key is a 128-bit SipHash key.
type Key struct{ K0, K1 uint64 }

// Ring gives the key of the day of a line (At), making or deriving it the
// first time the day is asked for, and destroys the keys of the days that
// are over (Advance). At may be called from any goroutine and does not
// allocate once its day's key is known; Save and Advance belong to the
// goroutine that commits.
type Ring struct {
	loc    *time.Location
	keep   time.Duration // how long after its day's end a key is kept
	derive func(day uint32) Key
	file   *file // random keys' file; nil for derived keys
	log    *slog.Logger

	cur atomic.Pointer[span] // the day of the line asked for last

	mu      sync.Mutex
	days    map[uint32]*span
	unsaved []uint32 // days whose random key is not in the file yet
	horizon int64    // the newest committed line, unix seconds
}

// span is a day and its key.
type span struct {
	start, end int64 // unix seconds: the day is [start, end)
	day        uint32
	key        Key
	// late is set for the key of a day already retired: a line that
	// late gets a key of its own that is never kept.
	late bool
}

// Keep returns how long after its day's end a key is kept, for a window
// of length window that takes lines up to skew ahead of the clock.
func Keep(window, skew time.Duration) time.Duration { return max(window, skew) + Grace }

func newRing(loc *time.Location, keep time.Duration, logger *slog.Logger) *Ring {
	return &Ring{loc: loc, keep: keep, log: logger, days: make(map[uint32]*span)}
}

// At returns the key of the day (in the ring's zone) of unix second t.
func (r *Ring) At(t int64) (k0, k1 uint64) {
	if s := r.cur.Load(); s != nil && t >= s.start && t < s.end {
		return s.key.K0, s.key.K1
	}
	s := r.lookup(t)
	r.cur.Store(s)
	return s.key.K0, s.key.K1
}

// lookup returns the span of the day of t, making its key if need be.
func (r *Ring) lookup(t int64) *span {
	y, m, d := time.Unix(t, 0).In(r.loc).Date()
	day := uint32(y*10000 + int(m)*100 + d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.days[day]; ok {
		return s
	}
	start := time.Date(y, m, d, 0, 0, 0, 0, r.loc)
	s := &span{start: start.Unix(), end: start.AddDate(0, 0, 1).Unix(), day: day}
	switch {
	case r.derive != nil:
		s.key = r.derive(day)
	case r.retired(s):
		s.key, s.late = random(), true
		r.log.Warn("visitor key: a line came after its day's key was destroyed: its visitor counts as a new one of the day",
			"day", dayString(day))
	default:
		s.key = random()
		r.unsaved = append(r.unsaved, day)
	}
	r.days[day] = s
	return s
}

// retired reports whether the day of s is over for good: a line later
// than its end plus keep has been committed. r.mu is held.
func (r *Ring) retired(s *span) bool { return r.horizon >= s.end+int64(r.keep/time.Second) }

// Save writes the random keys made since the last Save to the keys file,
// and syncs it: called before each commit, so that no hash is stored
// whose key a restart could not find again.
func (r *Ring) Save() error {
	if r.file == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unsaved) == 0 {
		return nil
	}
	for _, day := range r.unsaved {
		if s := r.days[day]; s != nil {
			if err := r.file.put(day, s.key); err != nil {
				return err
			}
		}
	}
	if err := r.file.sync(); err != nil {
		return err
	}
	r.unsaved = r.unsaved[:0]
	return nil
}

// Advance tells the ring that lines up to unix second newest are
// committed, and destroys the keys of the days that are then over,
// overwriting them in the keys file. It returns the days retired.
func (r *Ring) Advance(newest int64) ([]uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if newest <= r.horizon {
		return nil, nil
	}
	r.horizon = newest
	var gone []uint32
	for day, s := range r.days {
		if r.retired(s) {
			gone = append(gone, day)
		}
	}
	if err := r.erase(gone); err != nil {
		return nil, err
	}
	for _, day := range gone {
		s := r.days[day]
		delete(r.days, day)
		if r.cur.Load() == s {
			r.cur.Store(nil)
		}
		if !s.late {
			r.log.Info("visitor key destroyed: the day's visitor hashes can no longer be tied to addresses", "day", dayString(day))
		}
	}
	r.unsaved = dropRetired(r.unsaved, r.days)
	return gone, nil
}

// erase overwrites the keys of days in the keys file, and syncs it. r.mu
// is held.
func (r *Ring) erase(days []uint32) error {
	if r.file == nil || len(days) == 0 {
		return nil
	}
	for _, day := range days {
		if err := r.file.erase(day); err != nil {
			return err
		}
	}
	return r.file.sync()
}

// dropRetired keeps the unsaved days that still have a key.
func dropRetired(unsaved []uint32, days map[uint32]*span) []uint32 {
	out := unsaved[:0]
	for _, d := range unsaved {
		if _, ok := days[d]; ok {
			out = append(out, d)
		}
	}
	return out
}

// Close closes the keys file, if any.
func (r *Ring) Close() error {
	if r.file == nil {
		return nil
	}
	return r.file.close()
}

// random returns a new random key.
func random() Key {
	var b [16]byte
	rand.Read(b[:])
	return Key{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])}
}

// dayString writes a yyyymmdd day as 2006-01-02.
func dayString(day uint32) string {
	return fmt.Sprintf("%04d-%02d-%02d", day/10000, day/100%100, day%100)
}
