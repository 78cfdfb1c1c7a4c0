package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	// ErrDamaged means the database file is damaged: a page of it cannot be
	// read as bbolt wrote it, or bbolt's consistency check found its pages
	// inconsistent. Open refuses such a file rather than serve from it and
	// crash when the damaged page is read.
	ErrDamaged = errors.New("database file is damaged")
	// ErrLocked means another process has the database file open: bbolt
	// locks the file (flock) for the one process that writes it.
	ErrLocked = errors.New("database file is in use by another process")
)

// DamageError says what is damaged in a database file.
type DamageError struct {
	Path     string
	Problems []string // what was found, at most maxProblems
	More     int      // how many more problems were found
}

// maxProblems is how many problems a DamageError lists.
const maxProblems = 10

func (e *DamageError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path + ": " + ErrDamaged.Error())
	if len(e.Problems) > 0 {
		b.WriteString(": " + e.Problems[0])
	}
	if n := len(e.Problems) - 1 + e.More; n > 0 {
		fmt.Fprintf(&b, " (and %d more)", n)
	}
	return b.String()
}

func (e *DamageError) Unwrap() error { return ErrDamaged }

// lockTimeout is how long opening waits for another process's lock on the
// file to go.
const lockTimeout = time.Second

// openFile opens the bbolt file at path, and checks it (see check) before
// anything else reads it: a damaged page would otherwise panic inside
// bbolt, whenever a query or a commit first reads it. It also returns the
// file bbolt opened, whose identity tells later whether path still names
// it.
func openFile(path string, readOnly bool) (*bolt.DB, os.FileInfo, error) {
	var file *os.File
	opts := &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly, PreLoadFreelist: true,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, mode)
			file = f
			return f, err
		}}
	// bbolt reads the free list as it opens the file, where a damaged one
	// panics; past that panic the file stays mapped, and so locked, until
	// the process ends. What it reads first is checked first, by reads.
	if problems := preflight(path); len(problems) > 0 && !lockedByOther(path) {
		return nil, nil, &DamageError{Path: path, Problems: problems}
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
	if err == nil {
		var problems []string
		problems, err = check(db, info.Size())
		if len(problems) > 0 {
			err = &DamageError{Path: path, Problems: problems[:min(len(problems), maxProblems)],
				More: max(len(problems)-maxProblems, 0)}
		}
	}
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
	noFreelist       = ^uint64(0)
)

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
	read := func(off int64, n int) []byte {
		b := make([]byte, n)
		if _, err := f.ReadAt(b, off); err != nil {
			return nil
		}
		return b
	}
	// Page 0's meta gives the page size; bbolt then takes the valid meta
	// of the later transaction.
	var meta []byte
	pageSize := int64(os.Getpagesize())
	for i := range int64(2) {
		m := read(i*pageSize+pageHeaderSize, metaSize)
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
	if meta == nil || pageSize < 1024 {
		return nil
	}
	freelist, pages := le.Uint64(meta[32:]), le.Uint64(meta[40:])
	if need := int64(pages) * pageSize; info.Size() < need {
		return []string{fmt.Sprintf("the file is %d bytes, and its pages need %d: it was cut short", info.Size(), need)}
	}
	if freelist == noFreelist {
		return nil
	}
	bad := func(why string) []string {
		return []string{fmt.Sprintf("the free list (page %d) is damaged: %s", freelist, why)}
	}
	if freelist < 2 || freelist >= pages {
		return bad("it is outside the file's pages")
	}
	h := read(int64(freelist)*pageSize, pageHeaderSize+8)
	if h == nil {
		return bad("it cannot be read")
	}
	if flags := le.Uint16(h[8:]); flags != freelistPageFlag {
		return bad(fmt.Sprintf("its page is not a free list (flags %#x)", flags))
	}
	count, start, overflow := uint64(le.Uint16(h[10:])), int64(pageHeaderSize), uint64(le.Uint32(h[12:]))
	if count == 0xFFFF { // the count is the first element
		count, start = le.Uint64(h[pageHeaderSize:]), pageHeaderSize+8
	}
	if overflow >= pages-freelist || count > uint64((int64(overflow+1)*pageSize-start)/8) {
		return bad(fmt.Sprintf("it says it holds %d pages on %d, more than fit", count, overflow+1))
	}
	ids := read(int64(freelist)*pageSize+start, int(count)*8)
	if ids == nil {
		return bad("it cannot be read")
	}
	for i := range int(count) {
		if id := le.Uint64(ids[i*8:]); id < 2 || id >= pages {
			return bad(fmt.Sprintf("it lists page %d, outside the file's %d pages", id, pages))
		}
	}
	return nil
}

// le is the byte order bbolt writes in on the machines logtally is built
// for (it writes its structs as they are in memory).
var le = binary.LittleEndian

// Check checks the database file at path, changing nothing: it reads every
// page of every bucket, then runs bbolt's consistency check (tx.Check).
// It returns nil when it finds no damage, a *DamageError (ErrDamaged) that
// says what is damaged, or why the file could not be checked (ErrLocked
// while a daemon has it open).
func Check(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err // bbolt would create it
	}
	db, _, err := openFile(path, true)
	if err != nil {
		return err
	}
	return db.Close()
}

// check reads every key and value of every bucket of db, and then, if that
// went well, runs bbolt's consistency check, and returns what is wrong.
//
// Reading comes first, under guard, because tx.Check runs on a goroutine of
// its own: a damaged page that points outside the file would fault there,
// which no recover can catch, and crash the program. Every page that
// tx.Check reads, the walk has read already without a fault.
func check(db *bolt.DB, size int64) (problems []string, err error) {
	var need int64
	if err := db.View(func(tx *bolt.Tx) error { need = tx.Size(); return nil }); err != nil {
		return nil, err
	}
	if size < need {
		return []string{fmt.Sprintf("the file is %d bytes, and its pages need %d: it was cut short", size, need)}, nil
	}
	roots := make(map[uint64]string) // bucket root page -> bucket
	for queue := [][][]byte{nil}; len(queue) > 0; queue = queue[1:] {
		path := queue[0]
		err := guard(func() error {
			return db.View(func(tx *bolt.Tx) error {
				c := tx.Cursor()
				if len(path) > 0 {
					b := tx.Bucket(path[0])
					for _, name := range path[1:] {
						b = b.Bucket(name)
					}
					roots[uint64(b.Root())] = bucketName(path)
					c = b.Cursor()
				}
				for k, v := c.First(); k != nil; k, v = c.Next() {
					touch(k)
					if v == nil {
						queue = append(queue, append(path[:len(path):len(path)], append([]byte(nil), k...)))
					}
					touch(v)
				}
				return nil
			})
		})
		var damage *DamageError
		if errors.As(err, &damage) {
			problems = append(problems, describe(path)+": "+damage.Problems[0])
		} else if err != nil {
			return nil, err
		}
	}
	if len(problems) > 0 {
		return problems, nil
	}
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			problems = append(problems, inBucket(err.Error(), roots))
		}
		return nil
	})
	return problems, err
}

// sink keeps touch's reads from being optimised away.
var sink byte

// touch reads a byte of every page b spans, so that a key or value that a
// damaged page points outside the file faults here, under guard.
func touch(b []byte) {
	for i := 0; i < len(b); i += 1 << 12 {
		sink ^= b[i]
	}
	if len(b) > 0 {
		sink ^= b[len(b)-1]
	}
}

// guard runs f, turning a panic inside bbolt, or a fault on the file's
// mapped memory, into a *DamageError: what bbolt does on a page it cannot
// read.
func guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamageError{Problems: []string{fmt.Sprint(r)}}
		}
	}()
	return f()
}

// What each bucket holds, for saying what is damaged; every site's buckets
// are named as sites/<site>/....
var bucketUse = map[string]string{
	"":                      "the list of buckets",
	"meta":                  "the file's schema and salt",
	"positions":             "the read positions of the log files",
	"sites":                 "the list of sites",
	"sites/<site>":          "the buckets of the site",
	"sites/<site>/minutes":  "per-minute counts",
	"sites/<site>/visitors": "visitor sets of recent minutes",
	"sites/<site>/hours":    "hourly counts",
	"sites/<site>/days":     "daily counts",
	"sites/<site>/paths":    "all-time page views per path",
	"sites/<site>/daypaths": "page views per path and day",
	"sites/<site>/counters": "bookkeeping counters",
	"sites/<site>/seconds":  "the live window's checkpoint",
	"sites/<site>/pathlog":  "page views per path not yet compacted",
	"sites/<site>/outbox":   "batches waiting to be shipped to the fleet",
}

// useOf says what the bucket named name (as bucketName gives it) holds.
func useOf(name string) (string, bool) {
	if rest, ok := strings.CutPrefix(name, "sites/"); ok {
		site, sub, nested := strings.Cut(rest, "/")
		name = "sites/<site>"
		if nested {
			name += "/" + sub
		}
		if site == "" {
			return "", false
		}
	}
	use, ok := bucketUse[name]
	return use, ok
}

func bucketName(path [][]byte) string {
	names := make([]string, len(path))
	for i, p := range path {
		names[i] = strconv.QuoteToGraphic(string(p))
		names[i] = names[i][1 : len(names[i])-1]
	}
	return strings.Join(names, "/")
}

// describe names a bucket and what it holds.
func describe(path [][]byte) string {
	name := bucketName(path)
	if use, ok := useOf(name); ok && name != "" {
		return use + " (bucket " + name + ")"
	} else if ok {
		return use
	}
	return "bucket " + name
}

var stackRoot = regexp.MustCompile(`[Ss]tack: \[(\d+)`)

// inBucket adds to a problem of tx.Check, which names pages, the bucket
// whose pages they are.
func inBucket(problem string, roots map[uint64]string) string {
	m := stackRoot.FindStringSubmatch(problem)
	if m == nil {
		return problem
	}
	root, _ := strconv.ParseUint(m[1], 10, 64)
	name, ok := roots[root]
	if !ok {
		return problem
	}
	if use, ok := useOf(name); ok {
		return use + " (bucket " + name + "): " + problem
	}
	return "bucket " + name + ": " + problem
}
