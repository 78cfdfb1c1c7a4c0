package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Opening a file checks only what bbolt reads as it opens it: its header
// (meta) pages and its free list, which bbolt reads at once and, damaged,
// panics on, leaving the file mapped and locked until the process ends;
// and that the file is as long as its pages. That costs a few reads
// whatever the file's size. Every other page is read when a query or a
// commit first needs it, and is checked only by Check (`logtally check`),
// which reads them all: doing so at every start would make a start cost
// as much as reading the whole file, seconds for a large one whose pages
// are not in the page cache.

// lockTimeout is how long opening waits for another process's lock on the
// file to go.
const lockTimeout = time.Second

// openFile opens the bbolt file at path, once preflight finds nothing
// wrong with what bbolt reads as it opens it. It also returns the file
// bbolt opened, whose identity tells later whether path still names it.
func openFile(path string, readOnly bool) (*bolt.DB, os.FileInfo, error) {
	var file *os.File
	opts := &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly, PreLoadFreelist: true, InitialMmapSize: initialMmap,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, mode)
			file = f
			return f, err
		}}
	if problems := preflight(path); len(problems) > 0 && !lockedByOther(path) {
		return nil, nil, &DamageError{Path: path, Problems: problems}
	}
	if foreign := foreignBuckets(path); len(foreign) > 0 {
		return nil, nil, fmt.Errorf("open %s: %w: it holds %s, buckets that logtally never writes: "+
			"it is another program's bbolt file", path, ErrForeign, strings.Join(foreign, ", "))
	}
	var db *bolt.DB
	err := guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, opts)
		return err
	})
	var damage *DamageError
	switch {
	case errors.As(err, &damage):
		damage.Path = path
		return nil, nil, damage
	case errors.Is(err, bolterrors.ErrTimeout):
		if pid := lockHolder(path); pid > 0 {
			return nil, nil, fmt.Errorf("open %s: %w (pid %d)", path, ErrLocked, pid)
		}
		return nil, nil, fmt.Errorf("open %s: %w", path, ErrLocked)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, nil, &DamageError{Path: path, Problems: []string{
			"its header pages are not a bbolt database's (" + err.Error() + "): is it a logtally database?"}}
	case err != nil:
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	info, err := file.Stat()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, info, nil
}

// The layout of bbolt's file that preflight reads: the header of every
// page, the meta page and the free list page (bbolt's internal/common).
const (
	pageHeaderSize   = 16 // id uint64, flags uint16, count uint16, overflow uint32
	metaSize         = 64 // magic, version, page size, flags, root bucket, free list, pages, txid, checksum
	metaMagic        = 0xED0CDAED
	metaVersion      = 2
	freelistPageFlag = 0x10
	leafPageFlag     = 0x02
	leafElementSize  = 16 // flags, pos, ksize, vsize: uint32 each
	noFreelist       = ^uint64(0)
)

// le is the byte order bbolt writes in on the machines logtally is built
// for (it writes its structs as they are in memory).
var le = binary.LittleEndian

// preflight reads what bbolt reads as it opens the file at path, the meta
// pages and the free list, and returns what is wrong with them: a file
// shorter than its pages, or a free list that is not one. It says nothing
// of what it cannot read, or of meta pages that are not valid, which bbolt
// reports itself.
func preflight(path string) (problems []string) {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return nil
	}
	meta, pageSize := readMeta(f)
	if meta == nil || pageSize < 1024 {
		return nil
	}
	freelist, pages := le.Uint64(meta[32:]), le.Uint64(meta[40:])
	if need := int64(pages) * pageSize; info.Size() < need {
		return []string{cutShort(info.Size(), need)}
	}
	if freelist == noFreelist {
		return nil
	}
	if why := checkFreelist(f, freelist, pages, pageSize); why != "" {
		return []string{fmt.Sprintf("the free list (page %d) is damaged: %s", freelist, why)}
	}
	return nil
}

// cutShort says that a file of size bytes is shorter than its pages.
func cutShort(size, need int64) string {
	return fmt.Sprintf("the file is %d bytes, and its pages need %d: it was cut short", size, need)
}

// readAt returns n bytes of f at off, or nil if they cannot be read.
func readAt(f *os.File, off int64, n int) []byte {
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil
	}
	return b
}

// readMeta returns the meta page that bbolt takes, the valid one of the
// later transaction (nil if neither is valid), and the file's page size,
// which page 0's meta gives.
func readMeta(f *os.File) (meta []byte, pageSize int64) {
	pageSize = int64(os.Getpagesize())
	for i := range int64(2) {
		m := readAt(f, i*pageSize+pageHeaderSize, metaSize)
		if m == nil || le.Uint32(m) != metaMagic || le.Uint32(m[4:]) != metaVersion {
			continue
		}
		h := fnv.New64a()
		h.Write(m[:56])
		if h.Sum64() != le.Uint64(m[56:]) {
			continue
		}
		if i == 0 {
			pageSize = int64(le.Uint32(m[8:]))
		}
		if meta == nil || le.Uint64(m[48:]) > le.Uint64(meta[48:]) {
			meta = m
		}
	}
	return meta, pageSize
}

// checkFreelist says what is wrong with the free list at page freelist of
// a file of pages pages, or "" if nothing is.
func checkFreelist(f *os.File, freelist, pages uint64, pageSize int64) string {
	if freelist < 2 || freelist >= pages {
		return "it is outside the file's pages"
	}
	h := readAt(f, int64(freelist)*pageSize, pageHeaderSize+8)
	if h == nil {
		return "it cannot be read"
	}
	if flags := le.Uint16(h[8:]); flags != freelistPageFlag {
		return fmt.Sprintf("its page is not a free list (flags %#x)", flags)
	}
	count, start, overflow := uint64(le.Uint16(h[10:])), int64(pageHeaderSize), uint64(le.Uint32(h[12:]))
	if count == 0xFFFF { // the count is the first element
		count, start = le.Uint64(h[pageHeaderSize:]), pageHeaderSize+8
	}
	if overflow >= pages-freelist || count > uint64((int64(overflow+1)*pageSize-start)/8) {
		return fmt.Sprintf("it says it holds %d pages on %d, more than fit", count, overflow+1)
	}
	ids := readAt(f, int64(freelist)*pageSize+start, int(count)*8)
	if ids == nil {
		return "it cannot be read"
	}
	for i := range int(count) {
		if id := le.Uint64(ids[i*8:]); id < 2 || id >= pages {
			return fmt.Sprintf("it lists page %d, outside the file's %d pages", id, pages)
		}
	}
	return ""
}

// rootBuckets are the buckets at the root of a logtally file: a bbolt file
// holding another is another program's.
var rootBuckets = map[string]bool{string(bucketMeta): true, string(bucketPositions): true, string(bucketSites): true}

// foreignBuckets returns the buckets at the root of the bbolt file at path
// that logtally never writes there, or nil: it reads the root bucket's
// page as bbolt lays it out, before bbolt opens the file for writing, which
// may write to it (bbolt writes a free list that the file lacks), so that
// another program's file is refused untouched. It says nothing of what it
// cannot read, which opening reports.
func foreignBuckets(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	meta, pageSize := readMeta(f)
	if meta == nil || pageSize < 1024 {
		return nil
	}
	root := le.Uint64(meta[16:])
	h := readAt(f, int64(root)*pageSize, pageHeaderSize)
	if h == nil {
		return nil
	}
	if le.Uint16(h[8:]) != leafPageFlag {
		// A branch: more buckets than fit a page, which logtally never has.
		return []string{"(more than a page of buckets)"}
	}
	count := int(le.Uint16(h[10:]))
	page := readAt(f, int64(root)*pageSize, int(pageSize)*(1+int(le.Uint32(h[12:]))))
	var foreign []string
	for i := range count {
		elem := pageHeaderSize + i*leafElementSize
		if elem+leafElementSize > len(page) {
			return nil
		}
		pos, ksize := int(le.Uint32(page[elem+4:])), int(le.Uint32(page[elem+8:]))
		if elem+pos+ksize > len(page) {
			return nil
		}
		name := string(page[elem+pos : elem+pos+ksize])
		if !rootBuckets[name] {
			foreign = append(foreign, strconv.QuoteToGraphic(name))
		}
	}
	return foreign
}
