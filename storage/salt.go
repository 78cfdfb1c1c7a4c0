package storage

import (
	"encoding/binary"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Files of schema 3 and before kept the visitor-hash salt in the file
// (meta/salt, and in fleet mode the fleet's, meta/fleet-salt), beside the
// hashes it salted: whoever had the file could test every address against
// them. Open of such a file deletes both (dropSalts) and then overwrites
// with zeros every page the file no longer uses (scrubSalts): bbolt
// copies a page on write and leaves the old copy's bytes in the page it
// frees, so deleting a key alone would leave the salt in the file until
// its page happened to be reused. The counts stay as they were.

// dropSalts deletes an older file's salts, and asks Open to scrub the
// pages that held them.
func (s *Store) dropSalts(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	for _, k := range [][]byte{keySalt, keyFleetSalt} {
		if meta.Get(k) == nil {
			continue
		}
		if err := meta.Delete(k); err != nil {
			return err
		}
		s.upgraded.saltDropped = true
	}
	return nil
}

// SaltDropped reports whether Open destroyed the visitor-hash salt of a
// file written by an older logtally.
func (s *Store) SaltDropped() bool { return s.upgraded.saltDropped }

// freelistPage is the flag of bbolt's free-list pages in a page header
// (the uint16 at offset 8).
const freelistPage = 0x10

// scrubSalts overwrites the free pages of the file with zeros once
// dropSalts has deleted the salts. Two commits first make both of bbolt's
// meta pages (the current one and the one it falls back on after a torn
// write) point past the deletion, and release the pages it freed; the
// free-list pages that the last commits freed are left alone, since the
// fallback meta page still names one of them, and they hold page numbers
// only. It runs inside Open, before anything else uses the file, so no
// transaction can read a page it overwrites.
func (s *Store) scrubSalts() error {
	if !s.upgraded.saltDropped {
		return nil
	}
	for range 2 {
		if err := s.db.Update(func(*bolt.Tx) error { return nil }); err != nil {
			return err
		}
	}
	var free []int64
	err := s.db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return err
			}
			if p.Type == "free" {
				free = append(free, int64(id))
			}
		}
	})
	if err != nil {
		return err
	}
	return zeroPages(s.cfg.Path, free, int64(s.db.Info().PageSize))
}

// zeroPages overwrites pages of the file path with zeros, except free-list
// pages, and syncs it.
func zeroPages(path string, pages []int64, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("scrub: %w", err)
	}
	defer f.Close()
	zero := make([]byte, size)
	var hdr [16]byte
	for _, id := range pages {
		if _, err := f.ReadAt(hdr[:], id*size); err != nil {
			return fmt.Errorf("scrub: page %d: %w", id, err)
		}
		if binary.LittleEndian.Uint16(hdr[8:])&freelistPage != 0 {
			continue
		}
		if _, err := f.WriteAt(zero, id*size); err != nil {
			return fmt.Errorf("scrub: page %d: %w", id, err)
		}
	}
	return f.Sync()
}
