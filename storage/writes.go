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

// maxWriteRuns is the most runs a site remembers (see writes.coalesce).
const maxWriteRuns = 256

// writes remembers which minutes of a site the commits of the last
// recentWrite wrote, for compactSets. A commit's minutes are mostly one
// run of consecutive minutes, so it remembers runs, not minutes: a replay
// of a hundred sites writes each site's every minute, and a time per
// site-minute held 9 MB of a 1M-line replay's heap. Runs older than
// recentWrite are let go as new ones come, so that a store that is never
// pruned holds no more than recentWrite's worth, and past maxWriteRuns the
// closest are merged (see coalesce): a replay of a thousand small sites
// wrote a run a site-minute, 31 MB of the heap of 1M lines.
type writes struct {
	runs []writeRun // at most maxWriteRuns
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
	// and would otherwise hold a run a commit, not a run a minute. The
	// commit's runs are sorted and disjoint: the one that can hold an old
	// run is the last that starts at or before it.
	added := w.runs[first:]
	kept := slices.DeleteFunc(w.runs[:first], func(old writeRun) bool {
		i, found := slices.BinarySearchFunc(added, old.lo, func(r writeRun, lo int64) int { return cmp.Compare(r.lo, lo) })
		if !found {
			i--
		}
		return i >= 0 && old.hi <= added[i].hi
	})
	w.runs = append(kept, added...)
	if len(w.runs) > maxWriteRuns {
		w.coalesce(maxWriteRuns / 2)
	}
}

// coalesce merges runs until at most most are left, those whose minutes
// lie closest together first, each merged run as recent as the more
// recent of the two: a replay of many small sites writes a minute here and
// there of each, a run each, faster than recentWrite lets them go. A
// minute between two runs merged then counts as written of late though no
// commit wrote it: its set is kept a little longer, which costs room, and
// never exactness.
func (w *writes) coalesce(most int) {
	runs := w.runs
	slices.SortFunc(runs, func(a, b writeRun) int { return cmp.Compare(a.lo, b.lo) })
	gaps := make([]int64, len(runs)-1)
	for i := 1; i < len(runs); i++ {
		gaps[i-1] = runs[i].lo - runs[i-1].hi
	}
	slices.Sort(gaps)
	// Merging the len(runs)-most smallest gaps leaves at most most runs.
	widest := gaps[len(runs)-most-1]
	out := runs[:1]
	for _, r := range runs[1:] {
		last := &out[len(out)-1]
		if r.lo-last.hi > widest {
			out = append(out, r)
			continue
		}
		last.hi = max(last.hi, r.hi)
		if r.at.After(last.at) {
			last.at = r.at
		}
	}
	w.runs = out
}

// expire lets go of the runs that no commit in the recentWrite before now
// wrote.
func (w *writes) expire(now time.Time) {
	w.runs = slices.DeleteFunc(w.runs, func(r writeRun) bool { return now.Sub(r.at) >= recentWrite })
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
