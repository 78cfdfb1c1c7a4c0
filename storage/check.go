package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

var (
	// ErrDamaged means the database file is damaged: a page of it cannot be
	// read as bbolt wrote it, or bbolt's consistency check found its pages
	// inconsistent. Check finds it in any page; Open refuses a file damaged
	// in what it reads (see preflight.go), rather than crash there.
	ErrDamaged = logtally.ErrDamaged
	// ErrLocked means another process has the database file open: bbolt
	// locks the file (flock) for the one process that writes it.
	ErrLocked = errors.New("database file is in use by another process")
	// ErrForeign means the file is a bbolt database that logtally did not
	// write: another program's. It is refused untouched.
	ErrForeign = errors.New("not a logtally database")
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

// Check checks the database file at path, changing nothing: it reads every
// page of every bucket, then runs bbolt's consistency check (tx.Check).
// It returns nil when it finds no damage, a *DamageError (ErrDamaged) that
// says what is damaged, or why the file could not be checked (ErrLocked
// while a daemon has it open). Open checks far less (see preflight.go):
// this is what `logtally check` runs.
func Check(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err // bbolt would create it
	}
	db, info, err := openFile(path, true)
	if err != nil {
		return err
	}
	if err := findDamage(db, path, info.Size()); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// findDamage checks db, the file at path of size bytes (see check), and
// returns a *DamageError that says what is damaged, nil if nothing is, or
// why it could not tell.
func findDamage(db *bolt.DB, path string, size int64) error {
	problems, more, err := check(db, size)
	if len(problems) > 0 {
		return &DamageError{Path: path, Problems: problems[:min(len(problems), maxProblems)],
			More: max(len(problems)-maxProblems, 0) + more}
	}
	return err
}

// guarded runs f, which reads or writes the store's file, turning a panic
// inside bbolt on a damaged page into a *DamageError. Open reads few pages
// (see preflight.go), so a damaged one is first read by a query or a
// commit, here: the whole file is then checked, as Check does, to say what
// is damaged. If that finds nothing, the panic was not the file's, and goes
// on.
func (s *Store) guarded(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if damage := s.file.damage.find(s.db, s.cfg.Path); damage != nil {
			err = damage
			return
		}
		panic(r)
	}()
	return f()
}

// damageMemo remembers the damage that a guarded read or write found. A
// damaged page is met again by every commit retried and every request that
// reads it: the whole file is checked once, one check at a time, and every
// later panic is answered with what that check found.
type damageMemo struct {
	mu    sync.Mutex
	found error // a *DamageError, once one is found
	// records are the damaged values that queries met and skipped, or
	// Verify found: at most maxProblems, and how many more.
	records []string
	more    int
	seen    map[string]bool // every value noted, up to maxCollected
}

// note remembers a damaged value that a query skipped.
func (m *damageMemo) note(problem string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[problem] {
		return
	}
	if m.seen == nil {
		m.seen = make(map[string]bool)
	}
	if len(m.seen) < maxCollected {
		m.seen[problem] = true
	}
	if len(m.records) < maxProblems {
		m.records = append(m.records, problem)
	} else {
		m.more++
	}
}

// known returns what is known to be damaged: the damage a guarded read or
// write found, then the values queries skipped; nil if nothing is.
func (m *damageMemo) known() *DamageError {
	m.mu.Lock()
	defer m.mu.Unlock()
	var d DamageError
	if found, ok := m.found.(*DamageError); ok {
		d = *found
		d.Problems = slices.Clone(found.Problems)
	}
	d.Problems = append(d.Problems, m.records...)
	d.More += m.more
	if len(d.Problems) == 0 {
		return nil
	}
	return &d
}

// find returns the damage of db, the file at path: the remembered one, or
// the one a full check finds now. It returns nil if the file is whole, and
// then the panic that asked was not the file's.
func (m *damageMemo) find(db *bolt.DB, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.found != nil {
		return m.found
	}
	size := int64(math.MaxInt64) // the file, if it cannot be told, is as long as its pages
	if info, err := os.Stat(path); err == nil {
		size = info.Size()
	}
	if damage := findDamage(db, path, size); errors.As(damage, new(*DamageError)) {
		m.found = damage
	}
	return m.found
}

// view is db.View under guarded.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	return s.guarded(func() error { return s.db.View(fn) })
}

// update is db.Update under guarded.
func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	return s.guarded(func() error { return s.db.Update(fn) })
}

// check reads every key and value of every bucket of db, decoding every
// value it knows (see verify.go), and then, if that went well, runs bbolt's
// consistency check, and returns what is wrong: at most maxCollected
// problems, and how many more it found.
//
// Reading comes first, under guard, because tx.Check runs on a goroutine of
// its own: a damaged page that points outside the file would fault there,
// which no recover can catch, and crash the program. Every page that
// tx.Check reads, the walk has read already without a fault.
func check(db *bolt.DB, size int64) (problems []string, more int, err error) {
	var need int64
	if err := db.View(func(tx *bolt.Tx) error { need = tx.Size(); return nil }); err != nil {
		return nil, 0, err
	}
	if size < need {
		return []string{cutShort(size, need)}, 0, nil
	}
	w := walk{roots: make(map[uint64]string)}
	if err := w.all(db); err != nil {
		return nil, 0, err
	}
	if len(w.problems) > 0 {
		return w.problems, w.more, nil
	}
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			w.add(inBucket(err.Error(), w.roots))
		}
		return nil
	})
	return w.problems, w.more, err
}

// Verify reads and decodes every value of the store's file once, as Check
// does (without bbolt's consistency check, which wants the file to
// itself), while the store serves: so that damage that no query has met
// yet shows in Damage, and in the log, once, with the fix. It returns
// when it is done, or early when ctx is.
func (s *Store) Verify(ctx context.Context, log *slog.Logger) {
	w := walk{ctx: ctx}
	err := s.guarded(func() error { return w.all(s.db) })
	if err != nil && ctx.Err() == nil {
		log.Warn("could not read the whole database file to look for damage", "db", s.cfg.Path, "err", err)
	}
	for _, p := range w.problems {
		s.file.damage.note(p)
	}
	if damage := s.Damage(); damage != nil {
		log.Error("database file is damaged: queries leave out what they cannot read, and say so",
			"db", s.cfg.Path, "err", damage, "fix", DamageFix(s.cfg.Path))
	}
}

// DamageFix is what to do about a damaged file at path.
func DamageFix(path string) string {
	return "stop logtally and run 'logtally check --db " + path + "', which lists what is damaged; then restore " +
		path + " from a backup, or move it aside and replay the logs you still have into a new file"
}

// maxCollected is the most problems a check keeps: a file damaged all
// over has more than anyone reads.
const maxCollected = 1000

// walk reads every bucket of a file, one read transaction a bucket, and
// collects what is damaged.
type walk struct {
	ctx      context.Context   // the walk stops early once it is done; nil: never
	roots    map[uint64]string // bucket root page -> bucket; nil: not wanted
	problems []string
	more     int // problems past maxCollected
}

func (w *walk) add(problem string) {
	if len(w.problems) == maxCollected {
		w.more++
		return
	}
	w.problems = append(w.problems, problem)
}

// all walks every bucket, breadth first from the root.
func (w *walk) all(db *bolt.DB) error {
	for queue := [][][]byte{nil}; len(queue) > 0; queue = queue[1:] {
		if w.ctx != nil && w.ctx.Err() != nil {
			return w.ctx.Err()
		}
		path := queue[0]
		var nested [][]byte
		err := guard(func() error {
			return db.View(func(tx *bolt.Tx) error {
				w.bucket(tx, path, &nested)
				return nil
			})
		})
		var damage *DamageError
		if errors.As(err, &damage) {
			w.add(describe(path) + ": " + damage.Problems[0])
		} else if err != nil {
			return err
		}
		for _, name := range nested {
			queue = append(queue, append(path[:len(path):len(path)], name))
		}
	}
	return nil
}

// bucket reads every key and value of the bucket at path, checking every
// value it knows, and adds the names of the buckets it holds to nested as
// it meets them: those met before a damaged page are walked still.
func (w *walk) bucket(tx *bolt.Tx, path [][]byte, nested *[][]byte) {
	c := tx.Cursor()
	name := bucketName(path)
	if len(path) > 0 {
		b := tx.Bucket(path[0])
		for _, name := range path[1:] {
			b = b.Bucket(name)
		}
		if w.roots != nil {
			w.roots[uint64(b.Root())] = name
		}
		c = b.Cursor()
	}
	var read byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		read ^= touch(k)
		if v == nil {
			*nested = append(*nested, bytes.Clone(k))
			continue
		}
		read ^= touch(v)
		if err := checkValue(name, k, v); err != nil {
			w.add(describe(path) + ", " + keyName(name, k) + ": " + err.Error())
		}
	}
	sink.Store(uint32(read))
}

// sink keeps touch's reads from being optimised away; several walks may
// run at once (see guarded).
var sink atomic.Uint32

// touch reads a byte of every page b spans, so that a key or value that a
// damaged page points outside the file faults here, under guard. It returns
// what it read, xored.
func touch(b []byte) (read byte) {
	for i := 0; i < len(b); i += 1 << 12 {
		read ^= b[i]
	}
	if len(b) > 0 {
		read ^= b[len(b)-1]
	}
	return read
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
	"meta":                  "the file's schema and settings",
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
