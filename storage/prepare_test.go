package storage

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// TestPreparedCommitsKeepTheirRecords: commits prepared at once on several
// goroutines and written in another order, or prepared while others
// write, one a round failing and prepared again, leave every site as the
// same batches committed one after the other do: a new minute's record,
// encoded into its preparing goroutine's reused buffer (prepScratch.recs),
// is not overwritten by another commit's before its transaction has
// written it.
func TestPreparedCommitsKeepTheirRecords(t *testing.T) {
	const sites, rounds = 6, 8
	s, want := mustOpen(t, Config{}), mustOpen(t, Config{})
	disk := errors.New("disk full")
	var fail atomic.Bool
	s.commit = func(tx *bolt.Tx) error {
		if fail.CompareAndSwap(true, false) {
			tx.Rollback()
			return disk
		}
		return tx.Commit()
	}
	// commit prepares and writes the round's batch of site i, prepared
	// again if its first commit fails.
	commit := func(c func() error, i, round int) {
		if err := c(); errors.Is(err, disk) {
			c, err = s.Prepare(roundBatch(i, round))
			if err == nil {
				err = c()
			}
			if err != nil {
				t.Error(err)
			}
		} else if err != nil {
			t.Error(err)
		}
	}
	for round := range rounds {
		for i := range sites {
			if err := want.Commit(roundBatch(i, round)); err != nil {
				t.Fatal(err)
			}
		}
		fail.Store(true)
		var wg sync.WaitGroup
		if round%2 == 0 { // all prepared, then written last first
			commits := make([]func() error, sites)
			for i := range sites {
				wg.Go(func() {
					var err error
					if commits[i], err = s.Prepare(roundBatch(i, round)); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			for i := sites - 1; i >= 0; i-- {
				commit(commits[i], i, round)
			}
			continue
		}
		for i := range sites { // each prepared while others write
			wg.Go(func() {
				c, err := s.Prepare(roundBatch(i, round))
				if err != nil {
					t.Error(err)
					return
				}
				commit(c, i, round)
			})
		}
		wg.Wait()
	}
	got, wantDump := dumpStore(t, s), dumpStore(t, want)
	var diffs []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range wantDump {
			if strings.HasPrefix(k, fmt.Sprintf("%q/", bucketSites)) && !yield(k) {
				return
			}
		}
	}) {
		if got[k] != wantDump[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %x, want %x", k, got[k], wantDump[k]))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("%d values differ from commits one after the other:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 10)], "\n"))
	}
}

// roundBatch is site i's batch of a round: 40 minutes of a few visitors
// and paths each, after the rounds before.
func roundBatch(i, round int) *tally.Batch {
	const minutes = 40
	b := tally.NewSiteBatch(fmt.Sprintf("s%d.example", i))
	for m := range minutes {
		sec := int64((round*minutes + m) * 60)
		for v := range 1 + (i+m)%5 {
			addHit(b, page(sec, uint64(i*1000+m*10+v+1), fmt.Sprintf("/p%d", (m+v)%3)), 200, 0, false)
		}
	}
	return b
}
