package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Days are cut in one zone for the life of a file: a day's record, its
// per-day path counts and the path log's days are keyed by its date there,
// and nothing in them says where an hour of it began. So the zone is
// stored at creation (meta/zone) and every later start cuts days in it: a
// --tz naming another zone is refused, rather than a day of one zone
// merged with a day of another. A file made before the zone was stored
// (schema 4 and before) takes the zone of its first start since, --tz or
// the machine's, which is what cut its days before if --tz never changed.

// keyZone is in meta: the name of the zone days are cut in, as
// time.LoadLocation takes it.
var keyZone = []byte("zone")

// ErrZone means the zone asked for (--tz) is not the one the file's days
// are cut in.
var ErrZone = errors.New("the database's days are cut in another zone")

// decodeZone reads a stored zone.
func decodeZone(v []byte) (*time.Location, error) {
	loc, err := time.LoadLocation(string(v))
	if len(v) == 0 || err != nil {
		return nil, fmt.Errorf("zone %q: %w", v, ErrCorrupt)
	}
	return loc, nil
}

// storedZone returns the zone stored in the file, and false if the file
// was made before it was stored.
func storedZone(tx *bolt.Tx) (name string, loc *time.Location, ok bool, err error) {
	v := tx.Bucket(bucketMeta).Get(keyZone)
	if v == nil {
		return "", nil, false, nil
	}
	loc, err = decodeZone(v)
	return string(v), loc, err == nil, err
}

// settleZone sets the zone the store's days are cut in: the stored one,
// which a TZ naming another refuses; or, with none stored, the one asked
// for (TZ, or the machine's), which it stores. write is false for a store
// opened read-only, which stores nothing.
func (s *Store) settleZone(tx *bolt.Tx, write bool) error {
	name, loc, ok, err := storedZone(tx)
	if err != nil {
		return err
	}
	if ok {
		if s.cfg.TZ != "" && !sameZone(s.cfg.TZ, name) {
			return fmt.Errorf("--tz %s: %w: %s cuts its days in %s, stored when it was made", s.cfg.TZ, ErrZone, s.cfg.Path, name)
		}
		s.loc = loc
		return nil
	}
	name = s.cfg.TZ
	if name == "" {
		if name, err = machineZone(); err != nil {
			return err
		}
	}
	if s.loc, err = time.LoadLocation(name); err != nil {
		return fmt.Errorf("--tz %s: %w", name, err)
	}
	if !write {
		return nil
	}
	s.upgraded.zoneAdopted = tx.Bucket(bucketSites) != nil // a file made before: not a new one
	return tx.Bucket(bucketMeta).Put(keyZone, []byte(name))
}

// Zone returns the name of the zone the store's days are cut in.
// time.LoadLocation's name of it.
func (s *Store) Zone() string { return s.loc.String() }

// ZoneAdopted reports whether Open stored the zone of a file made before
// logtally stored it: the zone of this start is the file's from now on.
func (s *Store) ZoneAdopted() bool { return s.upgraded.zoneAdopted }

// sameZone reports whether the zones named a and b cut days alike: the
// same name, or the same offset from UTC at every midnight and noon of
// 1990 to 2040 (UTC and Etc/UTC, say).
func sameZone(a, b string) bool {
	if a == b {
		return true
	}
	la, errA := time.LoadLocation(a)
	lb, errB := time.LoadLocation(b)
	if errA != nil || errB != nil {
		return false
	}
	for t := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC); t.Year() < 2040; t = t.Add(12 * time.Hour) {
		_, oa := t.In(la).Zone()
		_, ob := t.In(lb).Zone()
		if oa != ob {
			return false
		}
	}
	return true
}

// machineZone names the machine's zone as Go's time.Local finds it: TZ
// if set (empty or unknown: UTC), else /etc/localtime, which names its
// zone by the file it links to (or /etc/timezone names it). A machine
// whose zone has no name is UTC if it never leaves it; else its zone must
// be given. A zone that is UTC by another name is named UTC.
func machineZone() (string, error) {
	name, err := localZone()
	if err == nil && name != "UTC" && sameZone(name, "UTC") {
		name = "UTC" // Etc/UTC, Etc/Zulu, ...: one name, which reports print
	}
	return name, err
}

// localZone is machineZone before UTC's other names are made UTC.
func localZone() (string, error) {
	if tz, ok := os.LookupEnv("TZ"); ok {
		tz = strings.TrimPrefix(tz, ":")
		if _, err := time.LoadLocation(tz); tz != "" && err == nil && !strings.HasPrefix(tz, "/") {
			return tz, nil
		}
		if after, found := strings.CutPrefix(tz, "/usr/share/zoneinfo/"); found {
			return after, nil
		}
		return "UTC", nil
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
			if _, err := time.LoadLocation(name); err == nil {
				return name, nil
			}
		}
	}
	if b, err := os.ReadFile("/etc/timezone"); err == nil {
		name := strings.TrimSpace(string(b))
		if _, err := time.LoadLocation(name); name != "" && err == nil {
			return name, nil
		}
	}
	year := time.Now().Year()
	_, jan := time.Date(year, 1, 1, 0, 0, 0, 0, time.Local).Zone()
	_, jul := time.Date(year, 7, 1, 0, 0, 0, 0, time.Local).Zone()
	if jan == 0 && jul == 0 {
		return "UTC", nil
	}
	return "", errors.New("cannot name the machine's time zone, which the database stores: give --tz, such as --tz Europe/Paris")
}
