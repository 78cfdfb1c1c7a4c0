package keyring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// ErrCorrupt means the keys file is not one that this package wrote.
var ErrCorrupt = errors.New("corrupt visitor keys file")

// The keys file: a header, then fixed slots, one per day whose random key
// is kept. A slot is written in place when a key is made and overwritten
// with zeros when it is destroyed, then the file is synced: unlike a
// database that copies pages on write (bbolt keeps a freed page's old
// bytes until it reuses the page), nothing of a destroyed key is left in
// the file.
//
//	header  8 bytes  "ltkeys01"
//	slot   24 bytes  uint32 day (yyyymmdd, big-endian; 0: free), 4 bytes
//	                 zero, uint64 K0, uint64 K1 (little-endian)
var fileMagic = []byte("ltkeys01")

const slotSize = 24

// file is an open keys file.
type file struct {
	f     *os.File
	slots map[uint32]int64 // day to its slot's offset
	free  []int64          // offsets of free slots
	size  int64
}

// FilePath returns the keys file kept beside the database db.
func FilePath(db string) string { return db + ".keys" }

// OpenFile opens (creating it, readable by its owner alone, if missing)
// the keys file path of a node
// that counts alone, with days in loc whose keys are kept keep past their
// end (see Keep).
func OpenFile(path string, loc *time.Location, keep time.Duration, logger *slog.Logger) (*Ring, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	kf := &file{f: f, slots: make(map[uint32]int64)}
	r := newRing(loc, keep, logger)
	r.file = kf
	if err = kf.load(r); errors.Is(err, errEmpty) {
		err = kf.init(path)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("visitor keys %s: %w", path, err)
	}
	return r, nil
}

// init writes a new file's header and syncs it and its directory.
func (kf *file) init(path string) error {
	if _, err := kf.f.WriteAt(fileMagic, 0); err != nil {
		return err
	}
	kf.size = int64(len(fileMagic))
	if err := kf.f.Sync(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// errEmpty is a file with no header yet: created by a start that stopped
// before it wrote one, or just now.
var errEmpty = errors.New("no header")

// load reads every kept key into r. A slot cut short at the end (a start
// stopped while it wrote a key, which no commit used since Save had not
// returned) is left out, and overwritten by the next key.
func (kf *file) load(r *Ring) error {
	b, err := io.ReadAll(kf.f)
	if err != nil {
		return err
	}
	if len(b) < len(fileMagic) && bytes.HasPrefix(fileMagic, b) {
		return errEmpty
	}
	if !bytes.HasPrefix(b, fileMagic) {
		return ErrCorrupt
	}
	b = b[:len(b)-(len(b)-len(fileMagic))%slotSize]
	kf.size = int64(len(b))
	for off := int64(len(fileMagic)); off < kf.size; off += slotSize {
		slot := b[off : off+slotSize]
		day := binary.BigEndian.Uint32(slot)
		if day == 0 {
			kf.free = append(kf.free, off)
			continue
		}
		y, m, d := int(day/10000), time.Month(day/100%100), int(day%100)
		start := time.Date(y, m, d, 0, 0, 0, 0, r.loc)
		if start.Year() != y || start.Month() != m || start.Day() != d {
			return fmt.Errorf("day %d: %w", day, ErrCorrupt)
		}
		key := Key{binary.LittleEndian.Uint64(slot[8:]), binary.LittleEndian.Uint64(slot[16:])}
		r.days[day] = &span{start: start.Unix(), end: start.AddDate(0, 0, 1).Unix(), day: day, key: key}
		kf.slots[day] = off
	}
	return nil
}

// put writes a day's key in a free slot, or a new one at the end.
func (kf *file) put(day uint32, k Key) error {
	off, ok := kf.slots[day]
	if !ok && len(kf.free) > 0 {
		off, kf.free = kf.free[len(kf.free)-1], kf.free[:len(kf.free)-1]
	} else if !ok {
		off = kf.size
		kf.size += slotSize
	}
	var slot [slotSize]byte
	binary.BigEndian.PutUint32(slot[:], day)
	binary.LittleEndian.PutUint64(slot[8:], k.K0)
	binary.LittleEndian.PutUint64(slot[16:], k.K1)
	if _, err := kf.f.WriteAt(slot[:], off); err != nil {
		return fmt.Errorf("visitor keys: %w", err)
	}
	kf.slots[day] = off
	return nil
}

// erase overwrites a day's slot with zeros, freeing it.
func (kf *file) erase(day uint32) error {
	off, ok := kf.slots[day]
	if !ok {
		return nil
	}
	var zero [slotSize]byte
	if _, err := kf.f.WriteAt(zero[:], off); err != nil {
		return fmt.Errorf("visitor keys: %w", err)
	}
	delete(kf.slots, day)
	kf.free = append(kf.free, off)
	return nil
}

func (kf *file) sync() error {
	if err := kf.f.Sync(); err != nil {
		return fmt.Errorf("visitor keys: %w", err)
	}
	return nil
}

func (kf *file) close() error { return kf.f.Close() }

// syncDir syncs a directory, so that a file created in it stays.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
