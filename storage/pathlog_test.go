package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// view is one page view for a path log test: a path at a second after t0.
type view struct {
	sec  int64
	path string
}

// commitViews commits page views in one batch.
func commitViews(t *testing.T, s *Store, views []view) {
	t.Helper()
	commit(t, s, func(b *tally.Batch) {
		for _, v := range views {
			addHit(b, page(v.sec, 1, v.path), 200, 0, false)
		}
	})
}

// reopen closes s and opens its file again with the same configuration.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	cfg, now := s.cfg, s.now
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return mustOpenAt(t, cfg, now)
}

// checkPending fails unless pending is exactly the sum of the log values.
func checkPending(t *testing.T, s *Store) {
	t.Helper()
	want := make(map[uint32]map[string]int64)
	var size int64
	err := s.db.View(func(tx *bolt.Tx) error {
		return s.def.bucket(tx, bucketPathLog).ForEach(func(k, v []byte) error {
			day := binary.BigEndian.Uint32(k)
			if want[day] == nil {
				want[day] = make(map[string]int64)
			}
			size += int64(len(v))
			return decodeLog(v, func(p []byte, n int64) { want[day][string(p)] += n })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	s.def.log.mu.RLock()
	defer s.def.log.mu.RUnlock()
	got := make(map[uint32]map[string]int64)
	entries := 0
	for day, pd := range s.def.log.days {
		got[day] = make(map[string]int64)
		for i, n := range pd.views {
			if n != 0 {
				got[day][s.def.log.dict.names[i]] = n
				entries++
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pending differs from the log:\n got %v\nwant %v", got, want)
	}
	if s.def.log.bytes != size || s.def.log.paths != entries {
		t.Errorf("pending holds %d bytes, %d counts; the log %d bytes, %d counts", s.def.log.bytes, s.def.log.paths, size, entries)
	}
}

// logSize returns how many values the path log holds.
func logSize(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	s.db.View(func(tx *bolt.Tx) error {
		n = s.def.bucket(tx, bucketPathLog).Stats().KeyN
		return nil
	})
	return n
}

// answers returns PathCounts for paths (and logtally.OtherPath) on each of days.
func answers(t *testing.T, s *Store, paths []string, days ...time.Time) [][]logtally.PathCount {
	t.Helper()
	var out [][]logtally.PathCount
	for _, d := range days {
		got, err := s.PathCounts(append(slices.Clone(paths), logtally.OtherPath), d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}

// TestPathCountsEqualRecount commits random page views over two days, late
// lines for a folded day included, and checks PathCounts against a recount
// after every commit, compaction, reopen and fold.
func TestPathCountsEqualRecount(t *testing.T) {
	s := mustOpen(t, Config{})
	rng := rand.New(rand.NewPCG(5, 6))
	paths := make([]string, 3000)
	for i := range paths {
		paths[i] = fmt.Sprintf("/p/%d", i)
	}
	const day = 24 * 3600
	day0, day1 := t0, t0.Add(24*time.Hour) // fixedNow is in day1
	trueDay := map[time.Time]map[string]int64{day0: {}, day1: {}}
	check := func(when string) {
		t.Helper()
		checkPending(t, s)
		for _, d := range []time.Time{day0, day1} {
			got, err := s.PathCounts(paths, d)
			if err != nil {
				t.Fatal(err)
			}
			for i, pc := range got {
				p := paths[i]
				if want := (logtally.PathCount{Path: p, Day: trueDay[d][p], Total: trueDay[day0][p] + trueDay[day1][p]}); pc != want {
					t.Fatalf("%s: PathCounts(%s, day %s) = %+v, want %+v", when, p, d.Format(time.DateOnly), pc, want)
				}
			}
		}
	}
	for step := range 24 {
		var views []view
		for range 2000 {
			// Day 0 starts at noon: its seconds are the 12 hours after t0.
			sec := int64(rng.IntN(day / 2))
			d := day0
			if rng.IntN(2) == 0 {
				sec, d = day/2+int64(rng.IntN(day)), day1
			}
			p := paths[int(float64(len(paths))*rng.Float64()*rng.Float64())]
			views = append(views, view{sec, p})
			trueDay[d][p]++
		}
		commitViews(t, s, views)
		check(fmt.Sprintf("step %d, after commit", step))
		switch step % 6 {
		case 1:
			if err := s.compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := logSize(t, s); n != 0 {
				t.Fatalf("%d log values left after compaction", n)
			}
			check(fmt.Sprintf("step %d, after compaction", step))
		case 3:
			s = reopen(t, s)
			check(fmt.Sprintf("step %d, after reopening", step))
		case 5:
			if _, err := s.Prune(context.Background()); err != nil { // folds day 0
				t.Fatal(err)
			}
			check(fmt.Sprintf("step %d, after pruning", step))
		}
	}
}

// TestDayCapAdmitsFirstPaths checks the per-day cap as the path log applies
// it: the first MaxDayPaths distinct paths of a day are counted, later ones
// go to logtally.OtherPath, nothing is lost, and compaction and reopening change no
// answer. The cap is crossed both while every path is admitted without
// looking (the day is far from it) and with the admission set.
func TestDayCapAdmitsFirstPaths(t *testing.T) {
	const limit = 100
	for _, tt := range []struct {
		name  string
		batch int // distinct new paths per commit
	}{
		{"one commit crosses", 150},
		{"many commits cross", 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t, Config{MaxDayPaths: limit})
			rng := rand.New(rand.NewPCG(7, 8))
			truth := make(map[string]int64)
			var order [][]string // new paths of each commit
			var all []string
			var total int64
			for c := 0; len(all) < 3*limit; c++ {
				var views []view
				var fresh []string
				for range tt.batch {
					p := fmt.Sprintf("/new/%d", len(all))
					all = append(all, p)
					fresh = append(fresh, p)
					views = append(views, view{int64(rng.IntN(3600)), p})
				}
				for range 3 * tt.batch { // and paths seen before
					p := all[rng.IntN(len(all))]
					views = append(views, view{int64(rng.IntN(3600)), p})
				}
				for _, v := range views {
					truth[v.path]++
					total++
				}
				order = append(order, fresh)
				commitViews(t, s, views)
				if c%5 == 4 {
					if err := s.compact(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				checkPending(t, s)
			}
			before := answers(t, s, all, t0)
			got := before[0]
			admitted, seen := 0, 0
			var sum int64
			for i, pc := range got[:len(all)] {
				sum += pc.Day
				if pc.Day != 0 {
					admitted++
					if pc.Day != truth[all[i]] {
						t.Errorf("%s: %d page views today, want all %d or none", all[i], pc.Day, truth[all[i]])
					}
				}
			}
			sum += got[len(all)].Day
			if admitted != limit || sum != total {
				t.Errorf("%d paths admitted, %d page views counted; want %d and %d", admitted, sum, limit, total)
			}
			// Paths first seen in a commit that ended under the cap are
			// counted; those first seen after the cap was reached are not.
			for _, fresh := range order {
				in := 0
				for _, p := range fresh {
					if got[slices.Index(all, p)].Day != 0 {
						in++
					}
				}
				switch {
				case seen+len(fresh) <= limit && in != len(fresh):
					t.Errorf("a commit under the cap admitted %d of its %d new paths", in, len(fresh))
				case seen >= limit && in != 0:
					t.Errorf("a commit past the cap admitted %d new paths", in)
				}
				seen += len(fresh)
			}
			if err := s.compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			if after := answers(t, s, all, t0); !slices.EqualFunc(after, before, slices.Equal) {
				t.Error("answers changed with compaction")
			}
			s = reopen(t, s)
			if after := answers(t, s, all, t0); !slices.EqualFunc(after, before, slices.Equal) {
				t.Error("answers changed with reopening")
			}
			var distinct uint64
			s.db.View(func(tx *bolt.Tx) error {
				distinct = getUvarint(s.def.bucket(tx, bucketCounters).Get(pathCounterKey(dayKey(t0, time.UTC))))
				return nil
			})
			if distinct != limit {
				t.Errorf("stored distinct paths = %d, want %d", distinct, limit)
			}
		})
	}
}

// TestRestartWithUncompactedLog reopens a store whose log was never
// compacted, as after a crash, and checks that every answer is the same and
// that the log compacts into the same counts afterwards.
func TestRestartWithUncompactedLog(t *testing.T) {
	s := mustOpen(t, Config{MaxDayPaths: 20})
	var paths []string
	for i := range 40 {
		paths = append(paths, fmt.Sprintf("/a/%d", i))
	}
	for c := range 4 {
		var views []view
		for i, p := range paths[:10*(c+1)] {
			views = append(views, view{int64(60 * i), p})
		}
		commitViews(t, s, views)
	}
	before := answers(t, s, paths, t0)
	if logSize(t, s) == 0 {
		t.Fatal("nothing in the log to restart with")
	}
	s = reopen(t, s)
	checkPending(t, s)
	if got := answers(t, s, paths, t0); !slices.EqualFunc(got, before, slices.Equal) {
		t.Errorf("after reopening:\n%v\nwant\n%v", got, before)
	}
	// Admission goes on from the reopened pending counts: still 20 paths.
	commitViews(t, s, []view{{0, "/late/1"}, {0, paths[0]}})
	if err := s.compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := answers(t, s, append(slices.Clone(paths), "/late/1"), t0)[0]
	// /a/0 is counted in every commit; /a/20 to /a/39 came past the cap:
	// 2 and 1 page views each, and /late/1.
	if got[0].Day != 5 || got[40].Day != 0 || got[41].Day != 10*2+10*1+1 {
		t.Errorf("after compaction: %v", got)
	}
}

// TestFailedCommitLeavesPathLog checks that a commit that fails changes
// neither the log nor pending, and that the next one counts normally.
func TestFailedCommitLeavesPathLog(t *testing.T) {
	s := mustOpen(t, Config{MaxDayPaths: 3})
	commitViews(t, s, []view{{0, "/a"}, {1, "/b"}})
	before := answers(t, s, []string{"/a", "/b", "/c", "/d"}, t0)
	b := tally.NewBatch()
	addHit(b, page(2, 1, "/c"), 200, 0, false)
	addHit(b, page(3, 1, "/d"), 200, 0, false) // over the cap: other
	b.SetPosition(strings.Repeat("x", bolt.MaxKeySize+1), 1)
	if err := s.Commit(b); err == nil {
		t.Fatal("commit with an oversized position succeeded")
	}
	checkPending(t, s)
	if got := answers(t, s, []string{"/a", "/b", "/c", "/d"}, t0); !slices.EqualFunc(got, before, slices.Equal) {
		t.Errorf("a failed commit changed the answers:\n%v\nwant\n%v", got, before)
	}
	commitViews(t, s, []view{{2, "/d"}, {3, "/c"}})
	got := answers(t, s, []string{"/a", "/b", "/c", "/d"}, t0)[0]
	want := []logtally.PathCount{{Path: "/a", Day: 1, Total: 1}, {Path: "/b", Day: 1, Total: 1}, {Path: "/c", Day: 0, Total: 0}, {Path: "/d", Day: 1, Total: 1}, {Path: logtally.OtherPath, Day: 1, Total: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("after the failed commit: %v, want %v", got, want)
	}
	checkPending(t, s)
}

// TestCrashCopyHasLogAndPositions opens a copy of the file taken right after
// commits, as a crash would leave it before any compaction: the log and the
// positions are there together, and the answers are the same.
func TestCrashCopyHasLogAndPositions(t *testing.T) {
	s := mustOpen(t, Config{})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/a"), 200, 0, false)
		addHit(b, page(1, 2, "/b"), 200, 0, false)
		b.SetPosition("a.log", 100)
	})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(2, 1, "/a"), 200, 0, false)
		b.SetPosition("a.log", 200)
	})
	data, err := os.ReadFile(s.cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "crashed.db")
	if err := os.WriteFile(copyPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, Config{Path: copyPath})
	if off, _, _ := c.Position("a.log"); off != 200 {
		t.Errorf("position = %d, want 200", off)
	}
	if got, want := answers(t, c, []string{"/a", "/b"}, t0), answers(t, s, []string{"/a", "/b"}, t0); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("copy answers %v, want %v", got, want)
	}
	if got := answers(t, c, []string{"/a"}, t0)[0][0]; got.Day != 2 {
		t.Errorf("/a = %+v, want 2 page views", got)
	}
}

// TestLateLinesAtAllTimeCap commits lines for a day already folded into the
// all-time totals while those are at their cap: such a commit compacts in
// its own transaction, so that no answer changes later.
func TestLateLinesAtAllTimeCap(t *testing.T) {
	now := fixedNow()
	s := mustOpenAt(t, Config{MaxPaths: 3}, func() time.Time { return now })
	commitViews(t, s, []view{{0, "/a"}, {1, "/b"}, {2, "/a"}})
	if _, err := s.Prune(context.Background()); err != nil { // folds t0's day
		t.Fatal(err)
	}
	commitViews(t, s, []view{{3, "/c"}, {4, "/d"}, {5, "/e"}, {6, "/a"}})
	if n := logSize(t, s); n != 0 {
		t.Errorf("%d log values after a late commit at the all-time cap, want it compacted", n)
	}
	paths := []string{"/a", "/b", "/c", "/d", "/e"}
	before := answers(t, s, paths, t0)
	got := before[0]
	var admitted int
	var sum int64
	for _, pc := range got[:5] {
		if pc.Total > 0 {
			admitted++
		}
		sum += pc.Total
	}
	if admitted != 3 || sum+got[5].Total != 7 || got[0].Total != 3 {
		t.Errorf("totals %v: want 3 paths, /a with 3, 7 page views with %s", got, logtally.OtherPath)
	}
	s = reopen(t, s)
	if after := answers(t, s, paths, t0); !slices.EqualFunc(after, before, slices.Equal) {
		t.Errorf("after reopening %v, want %v", after, before)
	}
}

// TestPathLogBounds floods the store with random paths over many days,
// with no compaction but the commits' own, and checks that the log, pending
// and the admission sets stay within their bounds.
func TestPathLogBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("commits 600,000 distinct paths")
	}
	s := mustOpen(t, Config{MaxDayPaths: 150_000})
	const perCommit = 50_000
	woken := false
	for c := range 12 {
		b := tally.NewBatch()
		for i := range perCommit {
			// Two days a commit, six days in all.
			sec := int64((c/2)*24*3600 + (i%2)*12*3600 + i%3600)
			addHit(b, page(sec, uint64(i), fmt.Sprintf("/flood/%d/%d", c, i)), 200, 0, false)
		}
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.wake:
			woken = true
		default:
		}
		p := s.def.log
		if p.paths > compactHardPaths || p.bytes > compactHardBytes || len(p.days) > maxPendingDays {
			t.Fatalf("commit %d: pending holds %d counts, %d bytes, %d days", c, p.paths, p.bytes, len(p.days))
		}
		if p.dict.len() > compactHardPaths+perCommit {
			t.Fatalf("commit %d: dictionary of %d paths", c, p.dict.len())
		}
		if len(s.def.log.sets) > maxDaySets {
			t.Fatalf("commit %d: %d admission sets", c, len(s.def.log.sets))
		}
	}
	if !woken {
		t.Error("Commit never asked for a compaction")
	}
	checkPending(t, s)
	got, err := s.PathCounts([]string{"/flood/0/0", "/flood/11/49999", logtally.OtherPath}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Day != 1 || got[2].Day != 0 {
		t.Errorf("PathCounts = %v", got)
	}
}

// TestDaySetsEvicted crosses the cap on more days than maxDaySets keeps
// admission sets for, in turns, so that sets are evicted and built again.
func TestDaySetsEvicted(t *testing.T) {
	const limit = 30
	s := mustOpen(t, Config{MaxDayPaths: limit})
	truth := make(map[string]int64)
	var all []string
	for c := range 20 {
		d := int64(c % (maxDaySets + 2))
		var views []view
		for i := range 10 {
			p := fmt.Sprintf("/d%d/%d", d, c/(maxDaySets+2)*10+i)
			all = append(all, p)
			views = append(views, view{d*24*3600 + int64(i), p})
			truth[p]++
		}
		commitViews(t, s, views)
		if len(s.def.log.sets) > maxDaySets {
			t.Fatalf("%d admission sets", len(s.def.log.sets))
		}
	}
	before := answers(t, s, all, t0, t0.Add(24*time.Hour), t0.Add(48*time.Hour), t0.Add(72*time.Hour))
	for d, got := range before {
		admitted := 0
		for _, pc := range got[:len(all)] {
			if pc.Day > 0 {
				admitted++
			}
		}
		if admitted != limit {
			t.Errorf("day %d: %d paths admitted, want %d", d, admitted, limit)
		}
	}
	if err := s.compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := answers(t, s, all, t0, t0.Add(24*time.Hour), t0.Add(48*time.Hour), t0.Add(72*time.Hour))
	if !slices.EqualFunc(after, before, slices.Equal) {
		t.Error("answers changed with compaction")
	}
}

// TestUpgradeFromSchema1 opens a file of schema version 1, which has no path
// log: Open adds it and marks the file version 2.
func TestUpgradeFromSchema1(t *testing.T) {
	s := mustOpen(t, Config{})
	commitViews(t, s, []view{{0, "/a"}})
	s.compact(context.Background())
	path := s.cfg.Path
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bucketMeta).Put(keySchema, u64(1))
		return tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)).DeleteBucket(bucketPathLog)
	})
	db.Close()

	s = mustOpen(t, Config{Path: path})
	commitViews(t, s, []view{{1, "/a"}})
	if got := answers(t, s, []string{"/a"}, t0)[0][0]; got.Day != 2 {
		t.Errorf("/a = %+v after the upgrade, want 2 page views", got)
	}
	s.Close()
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keySchema)); v != SchemaVersion {
			t.Errorf("schema %d after the upgrade, want %d", v, SchemaVersion)
		}
		return nil
	})
}

// TestPathCountsDuringCompaction reads a path's count while commits add 3
// page views each and compactions run: a reader must never see the log
// counted twice or not at all.
func TestPathCountsDuringCompaction(t *testing.T) {
	s := mustOpen(t, Config{})
	done := make(chan error)
	go func() {
		defer close(done)
		for i := range 200 {
			b := tally.NewBatch()
			for j := range 3 {
				addHit(b, page(int64(i), uint64(j), "/x"), 200, 0, false)
			}
			if err := s.Commit(b); err != nil {
				done <- err
				return
			}
			if i%3 == 0 {
				if err := s.compact(context.Background()); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	var last int64
	for {
		got, err := s.PathCounts([]string{"/x"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if n := got[0].Day; n%3 != 0 || n < last || got[0].Total != n {
			t.Fatalf("read %+v after %d page views: not a whole number of commits", got[0], last)
		}
		last = got[0].Day
		select {
		case err, ok := <-done:
			if ok {
				t.Fatal(err)
			}
			if last != 600 {
				got, _ := s.PathCounts([]string{"/x"}, t0)
				if got[0].Day != 600 {
					t.Fatalf("/x = %+v at the end, want 600 page views", got[0])
				}
			}
			return
		default:
		}
	}
}

// TestCompactionFollowsShardSize runs a small site's day with compaction
// whenever a commit asks for it, as RunPruner does: the log must be merged
// once it is about as large as the shards (at least compactMinBytes), not
// left to grow to compactSoftBytes in the file.
func TestCompactionFollowsShardSize(t *testing.T) {
	s := mustOpen(t, Config{})
	maxLog, compactions := int64(0), 0
	for c := range 40 {
		b := tally.NewBatch()
		for i := range 5000 {
			addHit(b, page(int64(c*600+i%600), uint64(i), fmt.Sprintf("/articles/%d", (c*5000+i)%40_000)), 200, 0, false)
		}
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
		maxLog = max(maxLog, s.def.log.bytes)
		select {
		case <-s.wake:
			compactions++
			if err := s.compact(t.Context()); err != nil {
				t.Fatal(err)
			}
		default:
		}
	}
	checkPending(t, s)
	shards := int64(0)
	s.db.View(func(tx *bolt.Tx) error {
		return s.def.bucket(tx, bucketDayPaths).ForEach(func(k, v []byte) error {
			shards += int64(len(v))
			return nil
		})
	})
	if compactions < 2 || s.def.log.compactAt != max(shards, compactMinBytes) || maxLog > 2*compactMinBytes {
		t.Errorf("%d compactions; log up to %d bytes, compacted at %d; shards %d bytes", compactions, maxLog, s.def.log.compactAt, shards)
	}
}

// TestFileGrowsInSmallSteps checks that the file is not padded far past its
// data, as bbolt would by default (to a power of two up to 16 MiB): at most
// a step past what the last growth asked for.
func TestFileGrowsInSmallSteps(t *testing.T) {
	s := mustOpen(t, Config{})
	for c := range 8 {
		b := tally.NewBatch()
		for i := range 20_000 {
			addHit(b, page(int64(c*3600+i%3600), uint64(c*20_000+i), fmt.Sprintf("/p/%d", i)), 200, 0, false)
		}
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := s.Space()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if sp.File < 2<<20 || sp.InUse > sp.File || fi.Size() > sp.File+2*allocSize {
		t.Errorf("file %d bytes, data up to %d, %d in use", fi.Size(), sp.File, sp.InUse)
	}
}

// TestReadersDoNotWaitForCommit holds a commit, then a compaction, at two
// points of their transaction's commit, as a slow fsync would: before the
// file changes (its pages being written and synced) and after it changed
// but before the path log's counts follow (its meta page being synced).
// PathCounts must answer at both, with what the file it reads holds: never
// the log's page views twice or not at all.
func TestReadersDoNotWaitForCommit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(s *Store) error
		want  int64 // page views of /x once the write is in the file
	}{
		{"commit", func(s *Store) error {
			b := tally.NewBatch()
			for i := range 3 {
				addHit(b, page(int64(i), 1, "/x"), 200, 0, false)
			}
			addHit(b, page(3, 1, "/new"), 200, 0, false) // a path new to the dictionary
			return s.Commit(b)
		}, 5},
		{"compaction", func(s *Store) error { return s.compact(context.Background()) }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t, Config{})
			commitViews(t, s, []view{{0, "/x"}, {1, "/x"}})
			held, release := make(chan string), make(chan struct{})
			// stop lets a held write go if the test fails, so that
			// the store can close.
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			hold := func(at string) {
				select {
				case held <- at:
				case <-stop:
					return
				}
				select {
				case <-release:
				case <-stop:
				}
			}
			s.commit = func(tx *bolt.Tx) error {
				hold("before the file changes")
				err := tx.Commit()
				hold("after the file changed")
				return err
			}
			done := make(chan error)
			go func() { done <- tt.write(s) }()

			at := <-held
			readWithin(t, s, at, "/x", 2)
			release <- struct{}{}
			at = <-held
			readWithin(t, s, at, "/x", tt.want)
			if tt.name == "commit" {
				readWithin(t, s, at, "/new", 1)
			}
			release <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			readWithin(t, s, "after the write", "/x", tt.want)
			checkPending(t, s)
		})
	}
}

// readWithin checks a path's page views on t0's day, failing if PathCounts
// does not answer while a write is held: a reader must not wait for it.
func readWithin(t *testing.T, s *Store, at, path string, want int64) {
	t.Helper()
	type answer struct {
		got []logtally.PathCount
		err error
	}
	c := make(chan answer, 1)
	go func() {
		got, err := s.PathCounts([]string{path}, t0)
		c <- answer{got, err}
	}()
	select {
	case a := <-c:
		if a.err != nil {
			t.Fatalf("%s: %v", at, a.err)
		}
		if got := a.got[0]; got.Day != want || got.Total != want {
			t.Errorf("%s: %s = %+v, want %d page views", at, path, got, want)
		}
	case <-time.After(10 * time.Second): // only when failing: the reader is blocked
		t.Fatalf("%s: PathCounts waits for the write", at)
	}
}

// TestPathLogCountsFollowFile checks how the log's counts are paired with
// a reader's transaction: a change being committed is added for a reader
// whose file holds it, and a reader whose file is older than the counts is
// sent back for a newer one.
func TestPathLogCountsFollowFile(t *testing.T) {
	l := newPathLog()
	l.applied = 10
	read := func(txID int) (int64, bool) {
		var n int64
		ok := l.counts(txID, []string{"/a"}, func(_ int, _ uint32, v int64) { n += v })
		return n, ok
	}
	commit := &logChange{fresh: []string{"/a"}, days: []loggedDay{{day: 1,
		paths: []logtally.PageCount{{Path: "/a", PageViews: 3}}, slots: []int32{0}, ids: []int32{0}}}}
	l.publish(commit, 12)
	for _, tt := range []struct {
		txID int
		want int64
	}{{10, 0}, {11, 0}, {12, 3}} {
		if n, ok := read(tt.txID); !ok || n != tt.want {
			t.Errorf("committing, transaction %d reads %d, %v; want %d, true", tt.txID, n, ok, tt.want)
		}
	}
	l.apply(commit)
	if _, ok := read(11); ok {
		t.Error("a transaction older than the counts was not sent back")
	}
	if n, ok := read(12); !ok || n != 3 {
		t.Errorf("after the commit, transaction 12 reads %d, %v; want 3, true", n, ok)
	}
	compaction := &logChange{compacted: true}
	l.publish(compaction, 14)
	if n, ok := read(13); !ok || n != 3 {
		t.Errorf("compacting, transaction 13 reads %d, %v; want 3, true", n, ok)
	}
	if n, ok := read(14); !ok || n != 0 {
		t.Errorf("compacting, transaction 14 reads %d, %v; want 0 (in the shards), true", n, ok)
	}
	l.withdraw()
	if n, ok := read(13); !ok || n != 3 {
		t.Errorf("after a failed compaction, reads %d, %v; want 3, true", n, ok)
	}
}

// TestNumberingHints checks that a commit's path numbers always name the
// batch's paths in the dictionary, whatever the hints left by earlier
// commits: with another batch, after the dictionary was emptied and filled
// in another order, and for paths new to it.
func TestNumberingHints(t *testing.T) {
	d := &dict{slot: make(map[string]int32)}
	var nb numbering
	check := func(when string, names []string) {
		t.Helper()
		nb.start(d, names)
		defer nb.reset()
		for id, p := range names {
			sl := nb.number(int32(id))
			if got, ok := nameOf(d, &nb, sl); !ok || got != p {
				t.Errorf("%s: %s numbered %d, which names %q", when, p, sl, got)
			}
			if again := nb.number(int32(id)); again != sl {
				t.Errorf("%s: %s numbered %d, then %d", when, p, sl, again)
			}
		}
		if i := slices.Index(names, logtally.OtherPath); i >= 0 && nb.number(otherID) != nb.number(int32(i)) {
			t.Errorf("%s: %s has two numbers", when, logtally.OtherPath)
		}
		for _, p := range nb.fresh {
			d.insert(p) // as publishing the change does
		}
	}
	a := []string{"/a", "/b", "/c"}
	check("first commit", a)
	check("same batch", a)
	check("another batch", []string{"/c", "/a", "/d", logtally.OtherPath})
	check("back to the first", a)
	d.clear()
	for _, p := range []string{"/x", "/c", "/b"} {
		d.insert(p)
	}
	check("after the dictionary was emptied", a)
	// A commit that failed leaves hints to numbers that were never given.
	nb.start(d, []string{"/e", "/f"})
	nb.number(0)
	nb.number(1)
	nb.reset()
	d.insert("/f")
	check("after a failed commit", []string{"/e", "/f"})
}

// nameOf returns the path number sl names in d, or among nb's fresh paths.
func nameOf(d *dict, nb *numbering, sl int32) (string, bool) {
	switch {
	case sl < 0:
		return "", false
	case int(sl) < d.len():
		return d.names[sl], true
	case int(sl)-d.len() < len(nb.fresh):
		return nb.fresh[int(sl)-d.len()], true
	}
	return "", false
}
