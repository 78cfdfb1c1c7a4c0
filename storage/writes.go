package storage

import (
	"cmp"
	"iter"
	"slices"
	"time"

	"github.com/logtally/logtally/tally"
)

// recentWrite is how long after a commit last wrote a minute its visitor set
// is kept whatever its age: a file being read from far behind the newest
// minute keeps writing the same old minute across several commits.
const recentWrite = 10 * time.Minute

// writes remembers which minutes of a site the commits of the last
// recentWrite wrote, for compactSets. A commit's minutes are mostly one
// run of consecutive minutes, so it remembers runs, not minutes: a replay
// of a hundred sites writes each site's every minute, and a time per
// site-minute held 9 MB of a 1M-line replay's heap. Runs older than
// recentWrite are let go as new ones come, so that a store that is never
// pruned holds no more than recentWrite's worth.
type writes struct {
	runs []writeRun // in the order of their commits
}

// writeRun is a run of consecutive minutes that a commit wrote.
type writeRun struct {
	at     time.Time
	lo, hi int64 // unix minutes, lo <= hi
}

// add remembers that a commit at at wrote a batch's minutes, which come in
// time order.
func (w *writes) add(at time.Time, minutes iter.Seq2[int64, *tally.Delta]) {
	w.expire(at)
	first := len(w.runs)
	for m := range minutes {
		if n := len(w.runs); n > first && w.runs[n-1].hi+1 == m {
			w.runs[n-1].hi = m
			continue
		}
		w.runs = append(w.runs, writeRun{at: at, lo: m, hi: m})
	}
	// A run that this commit wrote again is now as recent as this
	// commit's: a live daemon commits every second into the same minute,
	// and would otherwise hold a run a commit, not a run a minute.
	added := w.runs[first:]
	kept := slices.DeleteFunc(w.runs[:first], func(old writeRun) bool {
		return slices.ContainsFunc(added, func(r writeRun) bool { return r.lo <= old.lo && old.hi <= r.hi })
	})
	w.runs = append(kept, added...)
}

// expire lets go of the runs that no commit in the recentWrite before now
// wrote.
func (w *writes) expire(now time.Time) {
	i := 0
	for i < len(w.runs) && now.Sub(w.runs[i].at) >= recentWrite {
		i++
	}
	if i > 0 {
		w.runs = append(w.runs[:0], w.runs[i:]...)
	}
}

// recent returns whether a commit in the recentWrite before now wrote a
// minute, letting go of the runs older than that.
func (w *writes) recent(now time.Time) func(minute int64) bool {
	w.expire(now)
	runs := slices.SortedFunc(slices.Values(w.runs), func(a, b writeRun) int { return cmp.Compare(a.lo, b.lo) })
	// Merged, the runs are disjoint and sorted by both ends, and a search
	// by the upper end finds the only one that can hold a minute.
	merged := runs[:0]
	for _, r := range runs {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	return func(minute int64) bool {
		i, _ := slices.BinarySearchFunc(merged, minute, func(r writeRun, m int64) int { return cmp.Compare(r.hi, m) })
		return i < len(merged) && merged[i].lo <= minute
	}
}
