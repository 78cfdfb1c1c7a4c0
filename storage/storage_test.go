package storage

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally/window"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func mustOpen(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func hit(sec int64, pageview bool, visitor uint64) window.Hit {
	return window.Hit{Time: t0.Unix() + sec, PageView: pageview, Visitor: visitor, Path: []byte("/")}
}

func TestCommitMergesMinutes(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "db"))
	b := NewBatch()
	b.Add(hit(0, true, 1))
	b.Add(hit(10, true, 2))
	b.Add(hit(59, false, 0))
	b.Add(hit(60, true, 1)) // next minute
	b.SetPosition("a.log", 100)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Add(hit(30, true, 2)) // visitor 2 again in minute 0: still 2 distinct
	b.Add(hit(31, true, 3))
	b.SetPosition("a.log", 180)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}

	got, err := s.Minutes(t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []Minute{
		{Time: t0, Requests: 5, PageViews: 4, Visitors: 3},
		{Time: t0.Add(time.Minute), Requests: 1, PageViews: 1, Visitors: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("minutes = %+v, want %+v", got, want)
	}
	if off, ok, err := s.Position("a.log"); err != nil || !ok || off != 180 {
		t.Errorf("Position = %d %v %v, want 180 true nil", off, ok, err)
	}
	if _, ok, _ := s.Position("b.log"); ok {
		t.Error("Position of an unknown file reported ok")
	}
}

func TestReopenKeepsDataAndSalt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	salt := s.Salt()
	b := NewBatch()
	b.Add(hit(0, true, 9))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = mustOpen(t, path)
	if s.Salt() != salt {
		t.Errorf("salt changed across reopen")
	}
	got, _ := s.Minutes(t0, t0)
	if len(got) != 1 || got[0].Requests != 1 {
		t.Errorf("minutes after reopen = %+v", got)
	}
}

func TestRefusesUnknownSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket(bucketMeta)
		return b.Put(keySchema, u64(SchemaVersion+1))
	})
	db.Close()
	if _, err := Open(path); !errors.Is(err, ErrSchema) {
		t.Fatalf("Open = %v, want ErrSchema", err)
	}
}

func TestMinuteEncodingRoundTrip(t *testing.T) {
	m := minuteValue{requests: 300, pageviews: 7, visitors: []uint64{1, 5, 1 << 63},
		paths: map[string]int64{"/": 4, "/a/b": 3}}
	var got minuteValue
	if err := got.decode(m.encode()); err != nil {
		t.Fatal(err)
	}
	if got.requests != m.requests || got.pageviews != m.pageviews || !slices.Equal(got.visitors, m.visitors) ||
		!maps.Equal(got.paths, m.paths) {
		t.Errorf("round trip = %+v, want %+v", got, m)
	}
	for _, bad := range [][]byte{nil, {2}, {1, 0x80}, append(m.encode(), 0), m.encode()[:len(m.encode())-1]} {
		if err := got.decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
}
