package storage

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// asSchema5 lays out the file at path as schema 5 did, with the visitor
// sets given apart, by minute key, in a bucket of their own (site
// default).
func asSchema5(t *testing.T, path string, sets map[string][]byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketMeta).Put(keySchema, u64(5)); err != nil {
			return err
		}
		vb, err := tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)).CreateBucketIfNotExists(bucketVisitors)
		if err != nil {
			return err
		}
		for k, v := range sets {
			if err := vb.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeOfAnEmptySet: a minute of no visitors whose schema 5 file
// held an empty set beside it is read, and written to, after the upgrade
// as before it; the set, which stands for nothing, is neither moved nor
// dropped.
func TestUpgradeOfAnEmptySet(t *testing.T) {
	cfg := setsConfig
	cfg.Path = filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, cfg)
	commit(t, s, func(b *tally.Batch) {
		for i := range int64(3) {
			addHit(b, asset(i), 200, 10, false)
		}
	})
	s.Close()
	asSchema5(t, cfg.Path, map[string][]byte{string(minuteKey(t0)): {}})
	if err := Check(cfg.Path); err != nil {
		t.Fatalf("check before the upgrade: %v", err)
	}
	s = mustOpen(t, cfg)
	if moved, dropped, first := s.SetsMoved(); moved != 0 || dropped != 0 {
		t.Errorf("SetsMoved = %d, %d, %q; want none", moved, dropped, first)
	}
	if ms, err := s.Minutes(t0, t0); err != nil || len(ms) != 1 || ms[0].Requests != 3 {
		t.Errorf("minute after the upgrade = %+v, %v; want its 3 requests (damage: %v)", ms, err, s.Damage())
	}
	commit(t, s, func(b *tally.Batch) { addHit(b, page(5, 42, "/"), 200, 10, false) })
	if ms, _ := s.Minutes(t0, t0); len(ms) != 1 || ms[0].Requests != 4 || ms[0].Visitors != 1 || ms[0].Approximate {
		t.Errorf("minute after a late line = %+v, want 4 requests and 1 exact visitor", ms)
	}
	s.Close()
	if err := Check(cfg.Path); err != nil {
		t.Errorf("check after the upgrade: %v", err)
	}
}

// TestUpgradeSaysWhatItDrops: a schema 5 set that cannot stand for its
// minute (here one visitor short of the count) is dropped, the minute
// keeping its count and its sketch, and SetsMoved says so, which Open's
// caller logs; the others are moved.
func TestUpgradeSaysWhatItDrops(t *testing.T) {
	path := v5Sets(t)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var key []byte
	sets := 0
	err = db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketSites).ForEach(func(site, _ []byte) error {
			if vb := tx.Bucket(bucketSites).Bucket(site).Bucket(bucketVisitors); vb != nil {
				sets += vb.Stats().KeyN
			}
			return nil
		})
		if err != nil {
			return err
		}
		vb := tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)).Bucket(bucketVisitors)
		k, v := vb.Cursor().Last()
		key = bytes.Clone(k)
		return vb.Put(key, v[8:])
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	minute := minuteTime(key)
	cfg := setsConfig
	cfg.Path = path
	s := mustOpenAt(t, cfg, func() time.Time { return t0.Add(4 * time.Hour) })
	moved, dropped, first := s.SetsMoved()
	if moved != sets-1 || dropped != 1 {
		t.Errorf("SetsMoved = %d moved, %d dropped; want %d, 1", moved, dropped, sets-1)
	}
	if want := "site default, minute " + minute.Format(time.RFC3339) + ": visitor set of"; !strings.HasPrefix(first, want) {
		t.Errorf("first dropped: %q, want it to start %q", first, want)
	}
	if _, ok, _ := s.MinuteVisitors(minute); ok {
		t.Error("the dropped set is still kept")
	}
	ms, err := s.Minutes(minute, minute)
	if err != nil || len(ms) != 1 || ms[0].Visitors == 0 || ms[0].Approximate {
		t.Errorf("the minute of the dropped set = %+v, %v; want its exact count", ms, err)
	}
}

// TestCompactionSaysWhatItLeaves: a minute whose set cannot be turned into
// its sketch (here, its hashes out of order under a right checksum) is left
// as it is by compaction, and the store's damage names it.
func TestCompactionSaysWhatItLeaves(t *testing.T) {
	now := fixedNow()
	s := mustOpenAt(t, Config{ExactVisitorsSpan: time.Hour}, func() time.Time { return now })
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/"), 200, 0, false)
		addHit(b, page(1, 2, "/"), 200, 0, false)
		addHit(b, page(3*3600, 3, "/"), 200, 0, false)
	})
	err := s.db.Update(func(tx *bolt.Tx) error {
		mb := tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)).Bucket(bucketMinutes)
		var r record
		if err := r.decode(mb.Get(minuteKey(t0)), true); err != nil {
			return err
		}
		set, _ := decodeHashes(r.set)
		set[0], set[1] = set[1], set[0]
		r.set = encodeHashes(set)
		v, err := r.encode()
		if err != nil {
			return err
		}
		return mb.Put(minuteKey(t0), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(recentWrite)
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Damage(); err == nil || !strings.Contains(err.Error(), "minute 2026-11-21T12:00:00Z") {
		t.Errorf("damage after compaction = %v, want the minute named", err)
	}
}
