package storage

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/sweep"
	bolt "go.etcd.io/bbolt"
)

// oldFile writes testdata/v3-salted.db.gz, a file that logtally made
// before keyed hashes (schema 3: `logtally replay --tz UTC` of 300 page
// views of 10.1.0.0/16 from 2026-03-05 23:30 to 00:30 UTC), to a temporary
// file, and returns its path.
func oldFile(t *testing.T) string {
	t.Helper()
	return readGzip(t, "testdata/v3-salted.db.gz")
}

// storedHashes returns the salts and the exact visitor sets of a file, as
// someone holding it would read them.
func storedHashes(t *testing.T, path string) (salts []uint64, hashes map[uint64]bool) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hashes = make(map[uint64]bool)
	err = db.View(func(tx *bolt.Tx) error {
		for _, k := range [][]byte{keySalt, keyFleetSalt} {
			if v := tx.Bucket(bucketMeta).Get(k); len(v) == 8 {
				salts = append(salts, binary.BigEndian.Uint64(v))
			}
		}
		site := tx.Bucket(bucketSites).Bucket([]byte("default"))
		if vb := site.Bucket(bucketVisitors); vb != nil { // schema 5 and before
			return vb.ForEach(func(_, v []byte) error {
				set, err := decodeHashes(v)
				for _, h := range set {
					hashes[h] = true
				}
				return err
			})
		}
		return site.Bucket(bucketMinutes).ForEach(func(_, v []byte) error {
			var r record
			if err := r.decode(v, true); err != nil {
				return err
			}
			set, err := decodeHashes(r.set)
			for _, h := range set {
				hashes[h] = true
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return salts, hashes
}

// TestUpgradeDestroysSalt opens a file of schema 3 (made by the old code):
// before, its salt turns its stored hashes back into addresses; after,
// the counts are the same, the salt's bytes are nowhere in the file, and
// the addresses cannot be found from the file.
func TestUpgradeDestroysSalt(t *testing.T) {
	path := oldFile(t)
	nets := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}
	salts, hashes := storedHashes(t, path)
	if len(salts) != 1 || len(hashes) == 0 {
		t.Fatalf("old file: %d salts, %d hashes", len(salts), len(hashes))
	}
	if got := sweep.Match(sweep.Found{Salts: salts}, hashes, nets, 0, 1); len(got) != len(hashes) {
		t.Fatalf("with the old salt, %d of %d stored hashes turn back into addresses: the sweep does not work", len(got), len(hashes))
	}
	from, to := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
	old, err := OpenReadOnly(Config{Path: path, TZ: "UTC"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wantMinutes, _ := old.Minutes(from, to)
	wantDays, _ := old.Series(from, to, 24*time.Hour)
	old.Close()

	s, err := Open(Config{Path: path, TZ: "UTC"}, func() time.Time { return to })
	if err != nil {
		t.Fatal(err)
	}
	if !s.SaltDropped() {
		t.Error("SaltDropped = false")
	}
	gotMinutes, _ := s.Minutes(from, to)
	gotDays, _ := s.Series(from, to, 24*time.Hour)
	s.Close()
	if len(gotMinutes) != len(wantMinutes) || len(wantMinutes) != 60 {
		t.Fatalf("minutes: %d, want %d (60)", len(gotMinutes), len(wantMinutes))
	}
	for i := range wantMinutes {
		if !reflect.DeepEqual(gotMinutes[i], wantMinutes[i]) {
			t.Errorf("minute %d: %+v, want %+v", i, gotMinutes[i], wantMinutes[i])
		}
	}
	for i := range wantDays.Points {
		if !reflect.DeepEqual(gotDays.Points[i], wantDays.Points[i]) {
			t.Errorf("day %d: %+v, want %+v", i, gotDays.Points[i], wantDays.Points[i])
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, binary.BigEndian.AppendUint64(nil, salts[0])) {
		t.Error("the salt's bytes are still in the file")
	}
	left, after := storedHashes(t, path)
	if len(left) != 0 || len(after) != len(hashes) {
		t.Errorf("after: %d salts, %d hashes; want none, %d", len(left), len(after), len(hashes))
	}
	if got := sweep.Match(sweep.Found{Salts: left}, after, nets, 1<<16, 2); len(got) != 0 {
		t.Errorf("addresses found after the upgrade: %v", got)
	}
}
