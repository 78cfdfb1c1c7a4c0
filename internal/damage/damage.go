// Package damage damages bbolt files as a disk does, for tests: it finds
// the values a bucket holds where they lie in the file's pages, and
// overwrites bytes of them, leaving every page header, every key and
// bbolt's own structure whole, so that only decoding the values can tell.
//
// The one idea: bbolt lays out a bucket as a tree of pages from its root
// page (its internal/common: a 16-byte page header, id, flags, count and
// overflow; a branch page's elements point to pages, a leaf page's to keys
// and values within the page), so the tree can be walked from the file's
// bytes alone, as a disk's damage would meet it.
package damage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Value is a value stored in a leaf page: where its bytes lie in the file.
type Value struct {
	Bucket []string // the path of the bucket that holds it
	Key    []byte
	Page   uint64 // the leaf page
	Off    int64  // the value's first byte in the file
	Len    int
}

const (
	headerSize  = 16 // id uint64, flags uint16, count uint16, overflow uint32
	elementSize = 16 // branch: pos, ksize uint32, pgid uint64; leaf: flags, pos, ksize, vsize uint32
	branchFlag  = 0x01
	leafFlag    = 0x02
	bucketFlag  = 0x01 // a leaf element that is a bucket, not a value
)

var le = binary.LittleEndian

// Values returns every value (not a nested bucket) of the bucket at
// bucket (a path of names) in the bbolt file at path, read from its pages.
// A bucket small enough to be stored inline in its parent has no pages of
// its own and yields none.
func Values(path string, bucket ...string) ([]Value, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	var root uint64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket[0]))
		for _, name := range bucket[1:] {
			if b == nil {
				break
			}
			b = b.Bucket([]byte(name))
		}
		if b == nil {
			return fmt.Errorf("no bucket %q", bucket)
		}
		root = uint64(b.Root())
		return nil
	})
	pageSize := int64(db.Info().PageSize)
	db.Close()
	if err != nil || root == 0 {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Value
	err = walk(f, pageSize, root, func(page uint64, off int64, key []byte, vlen int) {
		out = append(out, Value{Bucket: bucket, Key: key, Page: page, Off: off, Len: vlen})
	})
	return out, err
}

// walk calls leaf for every value of the tree of pages from root.
func walk(f *os.File, pageSize int64, id uint64, leaf func(page uint64, off int64, key []byte, vlen int)) error {
	h := make([]byte, headerSize)
	if _, err := f.ReadAt(h, int64(id)*pageSize); err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	flags, count, overflow := le.Uint16(h[8:]), int(le.Uint16(h[10:])), int64(le.Uint32(h[12:]))
	page := make([]byte, (overflow+1)*pageSize)
	if _, err := f.ReadAt(page, int64(id)*pageSize); err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	for i := range count {
		e := headerSize + i*elementSize
		switch flags {
		case branchFlag:
			if err := walk(f, pageSize, le.Uint64(page[e+8:]), leaf); err != nil {
				return err
			}
		case leafFlag:
			eflags, pos, ksize, vsize := le.Uint32(page[e:]), int(le.Uint32(page[e+4:])), int(le.Uint32(page[e+8:])), int(le.Uint32(page[e+12:]))
			if eflags&bucketFlag != 0 {
				continue
			}
			k := e + pos
			leaf(id, int64(id)*pageSize+int64(k+ksize), append([]byte(nil), page[k:k+ksize]...), vsize)
		default:
			return fmt.Errorf("page %d: flags %#x, neither a branch nor a leaf", id, flags)
		}
	}
	return nil
}

// Overwrite writes 1 to 4 random bytes at a random place inside v, in the
// file at path, so that at least one byte changes, and returns what was
// there before.
func Overwrite(path string, v Value, rng *rand.Rand) (before []byte, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := min(1+rng.IntN(4), v.Len)
	off := v.Off + int64(rng.IntN(v.Len-n+1))
	before = make([]byte, n)
	if _, err := f.ReadAt(before, off); err != nil {
		return nil, err
	}
	after := make([]byte, n)
	for {
		for i := range after {
			after[i] = byte(rng.UintN(256))
		}
		if !bytes.Equal(after, before) {
			break
		}
	}
	_, err = f.WriteAt(after, off)
	return before, err
}
