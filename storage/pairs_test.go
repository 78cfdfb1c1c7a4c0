package storage

import (
	"errors"
	"fmt"
	"testing"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// TestCounterSecondsKeepPairs: a named counter's stored seconds keep each
// key's visitors (what a restart restores its distinct visitors per key
// from), merged over two commits of one second, and the same when a
// commit that failed is tried again; a site's seconds keep none.
func TestCounterSecondsKeepPairs(t *testing.T) {
	s := mustOpen(t, Config{})
	const sec = 1_795_000_000
	batch := func(site string, hits ...[2]uint64) *tally.Batch {
		b := tally.NewSiteBatch(site)
		for _, h := range hits {
			b.Add(&logtally.Hit{Time: sec, Visitor: h[1], Path: []byte(fmt.Sprintf("k%d", h[0])), PageView: true, Status: 200}, true)
		}
		b.SetWindowStart(sec - 600)
		return b
	}
	counter := logtally.CounterSite("show")
	if err := s.Commit(batch(counter, [2]uint64{1, 9}, [2]uint64{1, 3}, [2]uint64{2, 9}, [2]uint64{1, 9}), batch("a.example", [2]uint64{1, 9})); err != nil {
		t.Fatal(err)
	}
	b := batch(counter, [2]uint64{1, 5}, [2]uint64{3, 3})
	disk := errors.New("disk full")
	s.commit = func(tx *bolt.Tx) error { tx.Rollback(); return disk }
	if err := s.Commit(b); !errors.Is(err, disk) {
		t.Fatalf("Commit = %v, want %v", err, disk)
	}
	s.commit = (*bolt.Tx).Commit
	if err := s.Commit(b); err != nil { // the same batch, tried again
		t.Fatal(err)
	}
	secs, err := mustSite(t, s, counter).WindowSeconds(sec, sec)
	if err != nil || len(secs) != 1 {
		t.Fatalf("WindowSeconds = %v, %v", secs, err)
	}
	if got, want := fmt.Sprint(secs[0].PathVisitors), "map[k1:[3 5 9] k2:[9] k3:[3]]"; got != want {
		t.Errorf("the counter's second keeps pairs %s, want %s", got, want)
	}
	if got := fmt.Sprint(secs[0].Paths); got != "map[k1:4 k2:1 k3:1]" {
		t.Errorf("the counter's second keeps paths %s", got)
	}
	site, err := mustSite(t, s, "a.example").WindowSeconds(sec, sec)
	if err != nil || len(site) != 1 || site[0].PathVisitors != nil {
		t.Errorf("a site's second keeps pairs: %+v, %v", site, err)
	}
}

// TestRetriedCommitKeepsSecondVisitors: a second's visitors, repeats
// included, stored by a commit tried again after one that failed, are the
// second's visitors and no others (a visitor 0 from the failed try's
// sorting would be one more visitor after a restart).
func TestRetriedCommitKeepsSecondVisitors(t *testing.T) {
	s := mustOpen(t, Config{})
	const sec = 1_795_000_000
	b := tally.NewSiteBatch("a.example")
	for _, v := range []uint64{9, 3, 9, 9, 5} {
		b.Add(&logtally.Hit{Time: sec, Visitor: v, Path: []byte("/p"), PageView: true, Status: 200}, true)
	}
	b.SetWindowStart(sec - 600)
	disk := errors.New("disk full")
	s.commit = func(tx *bolt.Tx) error { tx.Rollback(); return disk }
	if err := s.Commit(b); !errors.Is(err, disk) {
		t.Fatalf("Commit = %v, want %v", err, disk)
	}
	s.commit = (*bolt.Tx).Commit
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	secs, err := mustSite(t, s, "a.example").WindowSeconds(sec, sec)
	if err != nil || len(secs) != 1 {
		t.Fatalf("WindowSeconds = %v, %v", secs, err)
	}
	if got := fmt.Sprint(secs[0].Visitors); got != "[3 5 9]" {
		t.Errorf("the second's visitors after a retried commit: %s, want [3 5 9]", got)
	}
}
