package storage

import (
	"fmt"
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

// TestWritesStayBounded: a store that commits every second and is never
// pruned holds recentWrite's worth of runs, not one per commit ever made.
func TestWritesStayBounded(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var w writes
	for i := range 24 * 3600 {
		w.add(t0.Add(time.Duration(i)*time.Second), batchOfMinutes(int64(i/60), int64(i/60)+5).Minutes())
	}
	if got, want := len(w.runs), 2*int(recentWrite/time.Second); got != want {
		t.Errorf("%d runs after a day of commits, want %d (%s of commits, 2 runs each)", got, want, fmt.Sprint(recentWrite))
	}
}
