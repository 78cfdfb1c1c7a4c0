package storage

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// batchOfMinutes returns a batch with one hit in each of minutes.
func batchOfMinutes(minutes ...int64) *tally.Batch {
	b := tally.NewBatch()
	for _, m := range minutes {
		b.Add(&logtally.Hit{Time: m*60 + 1, Path: []byte("/"), PageView: true}, false)
	}
	return b
}

func TestWritesRecent(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	type commit struct {
		at      time.Duration // after t0
		minutes []int64
	}
	for _, tc := range []struct {
		name    string
		commits []commit
		now     time.Duration
		want    map[int64]bool
	}{
		{"one run", []commit{{0, []int64{10, 11, 12}}}, time.Minute,
			map[int64]bool{9: false, 10: true, 11: true, 12: true, 13: false}},
		{"gaps", []commit{{0, []int64{10, 12, 20}}}, time.Minute,
			map[int64]bool{10: true, 11: false, 12: true, 13: false, 19: false, 20: true}},
		{"overlapping commits", []commit{{0, []int64{10, 11, 12}}, {time.Second, []int64{5, 6, 11, 12, 13}}}, time.Minute,
			map[int64]bool{4: false, 5: true, 6: true, 7: false, 9: false, 10: true, 13: true, 14: false}},
		{"old commit expired", []commit{{0, []int64{10, 11}}, {5 * time.Minute, []int64{30}}}, recentWrite,
			map[int64]bool{10: false, 11: false, 30: true}},
		{"every commit expired", []commit{{0, []int64{10}}}, recentWrite,
			map[int64]bool{10: false}},
		{"just inside", []commit{{0, []int64{10}}}, recentWrite - time.Nanosecond,
			map[int64]bool{10: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			for _, c := range tc.commits {
				w.add(t0.Add(c.at), batchOfMinutes(c.minutes...).Minutes())
			}
			recent := w.recent(t0.Add(tc.now))
			for m, want := range tc.want {
				if got := recent(m); got != want {
					t.Errorf("recent(%d) = %v, want %v", m, got, want)
				}
			}
		})
	}
}

// TestWritesStayBounded: a daemon that commits every second, into the
// minute of the second and into one five minutes ahead, and is never
// pruned, holds the runs of the last recentWrite's minutes, not one a
// commit; and recent answers as a time kept per minute would.
func TestWritesStayBounded(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var w writes
	last := make(map[int64]time.Time) // the model: when each minute was last written
	var at time.Time
	for i := range 24 * 3600 {
		at = t0.Add(time.Duration(i) * time.Second)
		m := int64(i / 60)
		w.add(at, batchOfMinutes(m, m+5).Minutes())
		last[m], last[m+5] = at, at
	}
	if got, most := len(w.runs), 2*int(recentWrite/time.Minute+1); got > most {
		t.Errorf("%d runs after a day of commits, want at most %d (two a minute of the last %s)", got, most, recentWrite)
	}
	now := at.Add(time.Second)
	recent := w.recent(now)
	for m := range int64(24*60 + 10) {
		when, ok := last[m]
		if want := ok && now.Sub(when) < recentWrite; recent(m) != want {
			t.Errorf("recent(%d) = %v, want %v", m, !want, want)
		}
	}
}

// TestWritesStayBoundedWhenSparse: a replay of many small sites writes a
// minute here and there of each, in every commit, faster than recentWrite
// lets any go: a site's runs stay bounded (maxWriteRuns) all the same, and
// every minute written in the recentWrite before now is still recent (a
// minute between two runs merged may be too: its set is kept longer).
func TestWritesStayBoundedWhenSparse(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	var w writes
	last := make(map[int64]time.Time) // the model: when each minute was last written
	var at time.Time
	for i := range 3000 {
		at = t0.Add(time.Duration(i) * 200 * time.Millisecond)
		base := int64(i) * 3
		var minutes []int64
		for m := base; m < base+300; m += 2 + rng.Int64N(20) {
			minutes = append(minutes, m)
			last[m] = at
		}
		w.add(at, batchOfMinutes(minutes...).Minutes())
		if len(w.runs) > maxWriteRuns {
			t.Fatalf("commit %d: %d runs, want at most %d", i, len(w.runs), maxWriteRuns)
		}
	}
	now := at.Add(time.Second)
	recent := w.recent(now)
	for m, when := range last {
		if now.Sub(when) < recentWrite && !recent(m) {
			t.Errorf("recent(%d) = false, written %s before", m, now.Sub(when))
		}
	}
}
