package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally/tally"
)

// lateLine commits a page view at 23:30 UTC on the day of t0.
func lateLine(t *testing.T, s *Store) {
	t.Helper()
	commit(t, s, func(b *tally.Batch) { addHit(b, page(11*3600+30*60, 1, "/"), 200, 0, false) })
}

// dayOfLateLine returns the date of the stored day that holds lateLine's
// line, as the store cuts days.
func dayOfLateLine(t *testing.T, s *Store) string {
	t.Helper()
	got, err := s.days(t0.Add(-48*time.Hour), t0.Add(48*time.Hour))
	if err != nil || len(got) != 1 {
		t.Fatalf("days = %+v, %v; want one", got, err)
	}
	return got[0].Time.Format(time.DateOnly)
}

// TestZoneStoredAtCreation: the zone days are cut in is stored when the
// file is made, a later start without --tz cuts days in it, and one with
// another --tz is refused, the file untouched. Before, a start with
// another zone cut the next lines' days there, merging a 23:30 UTC line
// into the next day's record among lines of the day before.
func TestZoneStoredAtCreation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path, TZ: "UTC"})
	lateLine(t, s)
	s.Close()

	before, _ := os.ReadFile(path)
	_, err := Open(Config{Path: path, TZ: "Europe/Berlin"}, fixedNow)
	if !errors.Is(err, ErrZone) || !strings.Contains(err.Error(), "--tz Europe/Berlin") || !strings.Contains(err.Error(), "in UTC") {
		t.Errorf("Open with another zone = %v, want ErrZone naming --tz and UTC", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("the refused file was changed")
	}
	if _, err := OpenReadOnly(Config{Path: path, TZ: "Europe/Berlin"}, time.Second); !errors.Is(err, ErrZone) {
		t.Errorf("OpenReadOnly with another zone = %v, want ErrZone", err)
	}
	for _, tz := range []string{"", "UTC", "Etc/UTC"} {
		s, err := Open(Config{Path: path, TZ: tz}, fixedNow)
		if err != nil {
			t.Fatalf("--tz %q: %v", tz, err)
		}
		lateLine(t, s)
		if got, want := s.Zone(), "UTC"; got != want || s.ZoneAdopted() {
			t.Errorf("--tz %q: zone %q (adopted %v), want %q", tz, got, s.ZoneAdopted(), want)
		}
		if got, want := dayOfLateLine(t, s), t0.Format(time.DateOnly); got != want {
			t.Errorf("--tz %q: the line is on %s, want %s", tz, got, want)
		}
		s.Close()
	}
}

// TestZoneOfAnOlderFile: a file made before the zone was stored takes the
// zone of its first start since, once.
func TestZoneOfAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path, TZ: "Europe/Berlin"})
	lateLine(t, s)
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyZone) })
	db.Close()

	ro, err := OpenReadOnly(Config{Path: path, TZ: "Europe/Berlin"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	s, err = Open(Config{Path: path, TZ: "Europe/Berlin"}, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	if !s.ZoneAdopted() || s.Zone() != "Europe/Berlin" {
		t.Errorf("zone %q, adopted %v; want Europe/Berlin, adopted", s.Zone(), s.ZoneAdopted())
	}
	if got, want := dayOfLateLine(t, s), t0.AddDate(0, 0, 1).Format(time.DateOnly); got != want {
		t.Errorf("the line is on %s, want %s (in Berlin)", got, want)
	}
	s.Close()
	if _, err := Open(Config{Path: path, TZ: "UTC"}, fixedNow); !errors.Is(err, ErrZone) {
		t.Errorf("Open in UTC after the zone was adopted = %v, want ErrZone", err)
	}
}

// TestMachineZone: the machine's zone is named as Go's time.Local finds
// it, so that the zone stored is the one days were cut in before.
func TestMachineZone(t *testing.T) {
	for _, tt := range []struct{ tz, want string }{
		{"Europe/Paris", "Europe/Paris"}, {":America/New_York", "America/New_York"},
		{"", "UTC"}, {"Nowhere/Atlantis", "UTC"}, {"Etc/UTC", "UTC"}, {"Etc/Zulu", "UTC"}, {"/usr/share/zoneinfo/Asia/Tokyo", "Asia/Tokyo"},
	} {
		t.Setenv("TZ", tt.tz)
		if got, err := machineZone(); got != tt.want || err != nil {
			t.Errorf("TZ=%q: %q, %v; want %q", tt.tz, got, err, tt.want)
		}
	}
}
