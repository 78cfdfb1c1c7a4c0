package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// TestPruneOfManySitesCommitsFewTransactions: a pass of the pruner over
// many sites folds their days, compacts their path logs, turns their sets
// and deletes what expired in a few transactions, not one of each a site: each costs two
// syncs, and a daemon of a thousand sites prunes every minute. What it
// says it deleted is each site's.
func TestPruneOfManySitesCommitsFewTransactions(t *testing.T) {
	for _, keep := range []time.Duration{0, 150 * time.Minute} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) { testPruneOfManySites(t, keep) })
	}
}

func testPruneOfManySites(t *testing.T, keep time.Duration) {
	const sites, minutes = 60, 180
	now := t0.Add(3 * time.Hour)
	s := mustOpenAt(t, Config{MinuteRetention: keep, ApplyRetention: true}, func() time.Time { return now })
	var bs []*tally.Batch
	for i := range sites {
		bs = append(bs, tally.NewSiteBatch(fmt.Sprintf("s%d.example", i)))
	}
	// In two commits, so that the second expires what the first stored.
	for _, part := range [][2]int64{{0, minutes * 2 / 3}, {minutes * 2 / 3, minutes}} {
		for _, b := range bs {
			b.Reset()
			for m := part[0]; m < part[1]; m++ {
				addHit(b, page(60*m, uint64(m%7+1), fmt.Sprintf("/p%d", m%5)), 200, 0, false)
			}
		}
		if err := s.Commit(bs...); err != nil {
			t.Fatal(err)
		}
	}
	// Past midnight: each site has its day to fold, and the commits'
	// minutes are no longer written of late.
	now = t0.Add(13 * time.Hour)
	before := lastTx(t, s)
	pruned, err := s.Prune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	span := int(DefaultConfig().ExactVisitorsSpan/time.Minute) + 1 // the newest and the span before it
	expired := 0
	if keep > 0 {
		expired = minutes - int(keep/time.Minute) - 1
	}
	// One for each maxFoldDays days folded (the logs compacted with them),
	// and one for each pruneBatch of sets turned or of minutes deleted.
	want := (sites+maxFoldDays-1)/maxFoldDays + (sites*(minutes-span)+pruneBatch-1)/pruneBatch +
		(sites*expired+pruneBatch-1)/pruneBatch
	if txs := lastTx(t, s) - before; txs > want {
		t.Errorf("a prune of %d sites committed %d transactions, want at most %d", sites, txs, want)
	}
	if expired > 0 {
		if len(pruned) != sites {
			t.Fatalf("pruned %d sites' minutes, want %d: %+v", len(pruned), sites, pruned)
		}
		bySite := make(map[string]Pruned)
		for _, p := range pruned {
			bySite[p.Site] = p
		}
		for _, b := range bs {
			p := bySite[b.Site()]
			if p.What != "minutes" || p.Count != expired || !p.From.Equal(t0) ||
				!p.To.Equal(t0.Add(time.Duration(expired-1)*time.Minute)) {
				t.Errorf("pruned %+v, want %s's %d minutes from %s", p, b.Site(), expired, t0)
			}
		}
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		for _, b := range bs {
			si, _ := s.Site(b.Site())
			sets := 0
			si.bucket(tx, bucketMinutes).ForEach(func(k, v []byte) error {
				if holdsSet(v) {
					sets++
				}
				return nil
			})
			if sets != min(span, minutes-expired) {
				t.Errorf("site %s: %d minutes keep their sets, want the %d of the span", b.Site(), sets, span)
			}
			if k, _ := si.bucket(tx, bucketPathLog).Cursor().First(); k != nil {
				t.Errorf("site %s: its path log is not compacted", b.Site())
			}
			if f := si.bucket(tx, bucketCounters).Get(keyFolded); !bytes.Equal(f, dayKey(t0, time.UTC)) {
				t.Errorf("site %s: folded to %x, want its day %x", b.Site(), f, dayKey(t0, time.UTC))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lastTx is the number of the last write transaction committed to s.
func lastTx(t *testing.T, s *Store) int {
	t.Helper()
	var id int
	if err := s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestPruneGoesOnPastADamagedSite: a site whose per-day page counts are
// damaged cannot fold its day, and Prune says so; the other sites are
// still pruned, their days folded and their expired minutes deleted.
func TestPruneGoesOnPastADamagedSite(t *testing.T) {

	now := t0.Add(26 * time.Hour)
	s := mustOpenAt(t, Config{MinuteRetention: time.Hour, ApplyRetention: true}, func() time.Time { return now })
	names := []string{"a.example", "b.example", "c.example"}
	for _, sec := range []int64{0, 25 * 3600} { // the second expires the first
		var bs []*tally.Batch
		for _, name := range names {
			b := tally.NewSiteBatch(name)
			addHit(b, page(sec, 1, "/"), 200, 0, false)
			bs = append(bs, b)
		}
		if err := s.Commit(bs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := mustSite(t, s, "b.example").bucket(tx, bucketDayPaths)
		k, _ := b.Cursor().First()
		if k == nil {
			return fmt.Errorf("no per-day page counts")
		}
		return b.Put(bytes.Clone(k), []byte{0xff})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(context.Background()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("prune: %v, want %v", err, ErrCorrupt)
	}
	for _, name := range []string{"a.example", "c.example"} {
		si := mustSite(t, s, name)
		if m, err := si.Minutes(t0, t0.Add(time.Hour)); err != nil || len(m) != 0 {
			t.Errorf("%s: %d minutes past the retention kept (%v)", name, len(m), err)
		}
		if err := s.db.View(func(tx *bolt.Tx) error {
			if f := si.bucket(tx, bucketCounters).Get(keyFolded); !bytes.Equal(f, dayKey(t0, time.UTC)) {
				t.Errorf("%s: folded to %x, want %x", name, f, dayKey(t0, time.UTC))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPruneDuringCommitsCountsEveryView: prunes of many sites, their
// transactions shared, run while commits go on (late lines into days
// folded already among them) and the days turn: every page view committed
// is counted once, on its day and all-time.
func TestPruneDuringCommitsCountsEveryView(t *testing.T) {
	const sites, commits = 20, 60
	var clock atomic.Int64
	clock.Store(t0.Unix())
	s := noSync(mustOpenAt(t, Config{}, func() time.Time { return time.Unix(clock.Load(), 0) }))
	rng := rand.New(rand.NewPCG(7, 8))
	want := make(map[string]map[int64]int64) // site, day (unix) -> views of /p<day%3>
	done := make(chan struct{})
	pruned := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				pruned <- nil
				return
			default:
			}
			if _, err := s.Prune(context.Background()); err != nil {
				pruned <- err
				return
			}
		}
	}()
	for c := range commits {
		now := clock.Load()
		var bs []*tally.Batch
		for _, i := range rng.Perm(sites)[:1+rng.IntN(sites)] {
			site := fmt.Sprintf("s%d.example", i)
			b := tally.NewSiteBatch(site)
			for range 1 + rng.IntN(5) {
				at := now - rng.Int64N(3*86400) // up to three days late
				day := logtally.FloorDiv(at, 86400) * 86400
				addHit(b, page(at-t0.Unix(), rng.Uint64N(9)+1, fmt.Sprintf("/p%d", day/86400%3)), 200, 0, false)
				if want[site] == nil {
					want[site] = make(map[int64]int64)
				}
				want[site][day]++
			}
			bs = append(bs, b)
		}
		if err := s.Commit(bs...); err != nil {
			t.Fatal(err)
		}
		if c%5 == 4 {
			clock.Add(7 * 3600)
		}
	}
	close(done)
	if err := <-pruned; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	for site, days := range want {
		si := mustSite(t, s, site)
		total := make(map[string]int64)
		for day, n := range days {
			total[fmt.Sprintf("/p%d", day/86400%3)] += n
		}
		for day, n := range days {
			path := fmt.Sprintf("/p%d", day/86400%3)
			got, err := si.PathCounts([]string{path}, time.Unix(day, 0))
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Day != n || got[0].Total != total[path] {
				t.Errorf("%s: %s on %s: %d, all-time %d; want %d and %d", site, path, time.Unix(day, 0).UTC().Format(time.DateOnly),
					got[0].Day, got[0].Total, n, total[path])
			}
		}
	}
}
