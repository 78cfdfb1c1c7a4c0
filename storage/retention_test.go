package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

const day = 24 * time.Hour

// stored counts the minutes, hours and days the store holds.
func stored(t *testing.T, s *Store) (minutes, hours, days int) {
	t.Helper()
	from, to := t0.Add(-400*day), t0.Add(4000*day)
	m, err := s.Minutes(from, to)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.hours(from, to)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.days(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return len(m), len(h), len(d)
}

// retention keeps minutes 14 days, hours 20 and days 25.
var retention = Config{MinuteRetention: 14 * day, HourRetention: 20 * day, DayRetention: 25 * day}

// TestRetentionFollowsLogTime: history five years old, written on today's
// clock, keeps each resolution's span back from its newest line. A line
// older than a span when it arrives still counts in the coarser
// resolutions, and Kept says where each line went.
func TestRetentionFollowsLogTime(t *testing.T) {
	clock := t0.Add(5 * 365 * day) // an archive: the clock is years past its lines
	s := mustOpenAt(t, retention, func() time.Time { return clock })
	commit(t, s, func(b *tally.Batch) {
		for _, d := range []int64{0, 6, 12, 20, 30} {
			addHit(b, page(d*86400, 1, "/"), 200, 0, false)
		}
	})
	// The newest line is t0+30d: minutes from t0+16d, hours from t0+10d,
	// days from t0+5d.
	if m, h, d := stored(t, s); m != 2 || h != 3 || d != 4 {
		t.Errorf("one commit stored %d minutes, %d hours, %d days; want 2, 3, 4", m, h, d)
	}
	if got, want := s.Kept(), (logtally.Kept{Minutes: 2, Hours: 3, Days: 4}); got != want {
		t.Errorf("Kept = %+v, want %+v", got, want)
	}
}

// TestPruneFollowsLogTime: lines committed in order, each within every span
// of the newest line so far, are pruned back to the spans of the newest
// line stored, not of the clock, and Prune says what it deleted.
func TestPruneFollowsLogTime(t *testing.T) {
	clock := t0.Add(5 * 365 * day)
	s := mustOpenAt(t, retention, func() time.Time { return clock })
	for _, d := range []int64{0, 6, 12, 20, 30} {
		commit(t, s, func(b *tally.Batch) { addHit(b, page(d*86400, 1, "/"), 200, 0, false) })
	}
	if m, h, d := stored(t, s); m != 5 || h != 5 || d != 5 {
		t.Fatalf("before pruning: %d minutes, %d hours, %d days; want 5 of each", m, h, d)
	}
	all, err := s.Prune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pruned []Pruned // the expired days' page counts never reached their shards
	for _, p := range all {
		if p.What != "per-day page counts" {
			pruned = append(pruned, p)
		}
	}
	if m, h, d := stored(t, s); m != 2 || h != 3 || d != 4 {
		t.Errorf("after pruning: %d minutes, %d hours, %d days; want 2, 3, 4", m, h, d)
	}
	want := []Pruned{
		{What: "minutes", Count: 3, From: t0, To: t0.Add(12 * day), KeptFrom: t0.Add(16 * day), Keep: 14 * day},
		{What: "hours", Count: 2, From: t0, To: t0.Add(6 * day), KeptFrom: t0.Add(10 * day), Keep: 20 * day},
		{What: "days", Count: 1, From: t0.Truncate(day), To: t0.Truncate(day), KeptFrom: t0.Add(5 * day).Truncate(day), Keep: 25 * day},
	}
	if len(pruned) != len(want) {
		t.Fatalf("Prune = %+v\nwant %+v", pruned, want)
	}
	for i := range want {
		p, w := pruned[i], want[i]
		if p.What != w.What || p.Count != w.Count || !p.From.Equal(w.From) || !p.To.Equal(w.To) || !p.KeptFrom.Equal(w.KeptFrom) || p.Keep != w.Keep {
			t.Errorf("Prune[%d] = %+v\nwant %+v", i, p, w)
		}
	}
}

// TestLivePruneFollowsItsSpans: on a live daemon the newest line is now, so
// minutes leave as the clock moves on and new lines come.
func TestLivePruneFollowsItsSpans(t *testing.T) {
	clock := t0
	s := mustOpenAt(t, Config{}, func() time.Time { return clock })
	commit(t, s, func(b *tally.Batch) { addHit(b, page(0, 1, "/"), 200, 0, false) })
	clock = t0.Add(15 * day)
	commit(t, s, func(b *tally.Batch) { addHit(b, page(15*86400, 1, "/"), 200, 0, false) })
	pruned, err := s.Prune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m, h, _ := stored(t, s); m != 1 || h != 2 || len(pruned) != 1 || pruned[0].What != "minutes" {
		t.Errorf("a live run 15 days on keeps %d minutes and %d hours, pruned %+v; want 1 minute (14 days), 2 hours", m, h, pruned)
	}
}

// TestFutureLineDoesNotExpireHistory: a line dated years ahead cannot move
// retention past the clock.
func TestFutureLineDoesNotExpireHistory(t *testing.T) {
	clock := t0.Add(time.Hour)
	s := mustOpenAt(t, Config{}, func() time.Time { return clock })
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/"), 200, 0, false)
		addHit(b, page(10*365*86400, 1, "/"), 200, 0, false)
	})
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Minutes(t0, t0); len(m) != 1 {
		t.Error("a line ten years ahead expired the minutes of today")
	}
}

// TestLongRetentionKeepsEverything: --keep-minutes 1000000h reaches back
// past 1970. It used to wrap around to the largest key and prune every
// minute.
func TestLongRetentionKeepsEverything(t *testing.T) {
	s := mustOpenAt(t, Config{MinuteRetention: 1000000 * time.Hour}, func() time.Time { return t0 })
	commit(t, s, func(b *tally.Batch) { addHit(b, page(0, 1, "/"), 200, 0, false) })
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := stored(t, s); m != 1 {
		t.Errorf("--keep-minutes 1000000h keeps %d minutes, want 1", m)
	}
}

// TestShorterRetentionIsHeld: a start with shorter spans than the stored
// ones deletes nothing and says what it would delete; with ApplyRetention
// it takes them, and the next prune deletes.
func TestShorterRetentionIsHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clock := t0.Add(5 * 365 * day)
	now := func() time.Time { return clock }
	s := mustOpenAt(t, Config{Path: path, MinuteRetention: 1000 * time.Hour}, now)
	for d := range int64(30) {
		commit(t, s, func(b *tally.Batch) { addHit(b, page(d*86400, 1, "/"), 200, 0, false) })
	}
	s.Close()

	s = mustOpenAt(t, Config{Path: path}, now) // the default, 14 days
	if r := s.Retention(); r.Minutes != 1000*time.Hour {
		t.Errorf("retention in force %v, want the stored 1000h", r.Minutes)
	}
	held := s.Held()
	want := Held{Site: logtally.DefaultSite, What: "minutes", Flag: "--keep-minutes", Asked: 14 * day, Kept: 1000 * time.Hour,
		Count: 15, From: t0, To: t0.Add(14 * day)}
	if len(held) != 1 || held[0] != want {
		t.Errorf("Held = %+v\nwant %+v", held, want)
	}
	var log bytes.Buffer
	s.LogRetention(slog.New(slog.NewTextHandler(&log, nil)))
	for _, w := range []string{"flag=--keep-minutes", "asked=14d", "in_force=1000h0m0s",
		`would_delete="15 minutes, 2026-11-21T12:00:00Z to 2026-12-05T12:00:00Z"`, "--apply-retention"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log %q lacks %q", log.String(), w)
		}
	}
	if pruned, err := s.Prune(context.Background()); err != nil || len(pruned) != 0 {
		t.Errorf("held retention pruned %+v, %v", pruned, err)
	}
	if m, _, _ := stored(t, s); m != 30 {
		t.Errorf("%d minutes after a start with a shorter span, want 30", m)
	}
	s.Close()

	s = mustOpenAt(t, Config{Path: path, ApplyRetention: true}, now)
	if len(s.Held()) != 0 || s.Retention().Minutes != 14*day {
		t.Errorf("with ApplyRetention: held %+v, in force %v", s.Held(), s.Retention().Minutes)
	}
	if pruned, err := s.Prune(context.Background()); err != nil || len(pruned) != 1 || pruned[0].Count != 15 {
		t.Errorf("applied retention pruned %+v, %v; want 15 minutes", pruned, err)
	}
	s.Close()

	// The shorter span is stored now: the default no longer warns.
	s = mustOpenAt(t, Config{Path: path}, now)
	if len(s.Held()) != 0 {
		t.Errorf("held %+v after the retention was applied", s.Held())
	}
}

// TestKeptFromAfterRetentionGrows: what a shorter span pruned stays
// missing when a longer one takes over, and KeptFrom says from when the
// store holds everything.
func TestKeptFromAfterRetentionGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clock := t0.Add(5 * 365 * day)
	now := func() time.Time { return clock }
	s := mustOpenAt(t, Config{Path: path}, now)
	for d := range int64(30) {
		commit(t, s, func(b *tally.Batch) { addHit(b, page(d*86400, 1, "/"), 200, 0, false) })
	}
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	check := func(step time.Duration, want time.Time) {
		t.Helper()
		got, ok, err := s.KeptFrom(step)
		if err != nil || !ok || !got.Equal(want) {
			t.Errorf("KeptFrom(%v) = %v, %t, %v; want %v", step, got, ok, err, want)
		}
	}
	newest := t0.Add(29 * day)
	check(time.Minute, newest.Add(-14*day))
	if series, err := s.Series(t0, t0.Add(time.Hour), time.Minute); err != nil || !series.KeptFrom.Equal(newest.Add(-14*day)) {
		t.Errorf("Series.KeptFrom = %v, %v; want %v", series.KeptFrom, err, newest.Add(-14*day))
	}
	check(5*time.Minute, newest.Add(-14*day))
	check(time.Hour, newest.Add(-400*day))
	if _, ok, _ := s.KeptFrom(day); ok {
		t.Error("days are kept forever, yet KeptFrom(1d) has a start")
	}
	s.Close()

	s = mustOpenAt(t, Config{Path: path, MinuteRetention: 1000 * time.Hour}, now)
	check(time.Minute, newest.Add(-14*day)) // what 14 days pruned is gone
	if m, _, _ := stored(t, s); m != 15 {
		t.Errorf("%d minutes, want 15", m)
	}
}

// TestUpgradeFromSchema2: a version 2 file pruned by the clock and did not
// store its retention; after the upgrade it holds each resolution whole
// only from its oldest record, and a version 2 program refuses it.
func TestUpgradeFromSchema2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clock := t0.Add(day)
	s := mustOpenAt(t, Config{Path: path}, func() time.Time { return clock })
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/"), 200, 0, false)
		addHit(b, page(3600, 1, "/"), 200, 0, false)
	})
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bucketMeta).Put(keySchema, u64(2))
		tx.Bucket(bucketMeta).Delete(keyRetention)
		counters := tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)).Bucket(bucketCounters)
		counters.Delete(keyNewest)
		return counters.Delete(keyKeptFrom)
	})
	db.Close()

	s = mustOpenAt(t, Config{Path: path}, func() time.Time { return clock })
	if got, ok, err := s.KeptFrom(time.Minute); err != nil || !ok || !got.Equal(t0) {
		t.Errorf("KeptFrom(1m) after the upgrade = %v, %t, %v; want the oldest minute, %v", got, ok, err, t0)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keySchema)); v != SchemaVersion {
			t.Errorf("schema %d after the upgrade, want %d", v, SchemaVersion)
		}
		if n, ok := s.def.newest(tx); !ok || n != t0.Add(time.Hour).Unix() {
			t.Errorf("newest after the upgrade = %d, %t; want the newest minute", n, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenReadOnly: a reader opens the file once no writer holds it, and
// says so, after its timeout, while one does.
func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpenAt(t, Config{Path: path, MinuteRetention: 30 * day}, func() time.Time { return t0 })
	commit(t, s, func(b *tally.Batch) { addHit(b, page(0, 1, "/"), 200, 0, false) })
	began := time.Now()
	if _, err := OpenReadOnly(Config{Path: path}, 200*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenReadOnly while a writer holds the file: %v, want ErrLocked", err)
	} else if waited := time.Since(began); waited > 5*time.Second {
		t.Errorf("waited %s for the lock, want about 200ms", waited)
	}
	s.Close()
	r, err := OpenReadOnly(Config{Path: path, TZ: "UTC"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if m, _ := r.Minutes(t0, t0); len(m) != 1 || m[0].Requests != 1 {
		t.Errorf("read-only minutes %+v", m)
	}
	if r.Retention().Minutes != 30*day {
		t.Errorf("read-only retention %v, want the stored 30d", r.Retention().Minutes)
	}
	if _, err := OpenReadOnly(Config{Path: path + ".none"}, time.Second); err == nil {
		t.Error("OpenReadOnly of a missing file succeeded")
	}
}
