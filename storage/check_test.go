package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// filledDB returns the path of a new copy of a database of five hours of
// minutes, as the store writes it.
func filledDB(t *testing.T) string {
	t.Helper()
	filled.Do(func() {
		dir, err := os.MkdirTemp("", "filled")
		if err != nil {
			filled.err = err
			return
		}
		defer os.RemoveAll(dir)
		s, err := Open(Config{Path: filepath.Join(dir, "db"), TZ: "UTC"}, fixedNow)
		if err != nil {
			filled.err = err
			return
		}
		for c := range 10 {
			b := tally.NewBatch()
			for m := c * 30; m < (c+1)*30; m++ {
				for i := range 20 {
					addHit(b, logtally.Hit{Time: t0.Add(time.Duration(m)*time.Minute).Unix() + int64(i), PageView: true,
						Visitor: uint64(m*1000 + i), Path: []byte(fmt.Sprintf("/page/%d", i%7))}, 200, 100, false)
				}
			}
			b.SetPosition("fp:a", int64(c+1)*1000)
			if filled.err = s.Commit(b); filled.err != nil {
				return
			}
		}
		if filled.err = s.Close(); filled.err == nil {
			filled.data, filled.err = os.ReadFile(filepath.Join(dir, "db"))
		}
	})
	if filled.err != nil {
		t.Fatal(filled.err)
	}
	path := filepath.Join(t.TempDir(), "logtally.db")
	if err := os.WriteFile(path, filled.data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// filled is the database filledDB copies, made once.
var filled struct {
	sync.Once
	data []byte
	err  error
}

// pageOf returns the root page of a bucket of the default site (of the
// site itself if bucket is nil), and the file's page size.
func pageOf(t *testing.T, path string, bucket []byte) (page, size int64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite))
		if bucket != nil {
			b = b.Bucket(bucket)
		}
		page = int64(b.Root())
		return nil
	})
	return page, int64(db.Info().PageSize)
}

// damage writes data over the file at off.
func damage(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
}

// damageCase is a way to damage the file of filledDB, and what is said
// of it (want, in the error).
type damageCase struct {
	name   string
	damage func(t *testing.T, path string)
	want   string
}

var garbage = bytes.Repeat([]byte("garbage!"), 512) // a page of it

// overRoot returns a damage that writes garbage over the root page of a
// bucket of the default site, or over the site's own page if bucket is nil.
func overRoot(bucket []byte) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		page, size := pageOf(t, path, bucket)
		if page == 0 {
			t.Fatalf("bucket %s is inline: it has no page of its own", bucket)
		}
		damage(t, path, page*size, garbage[:size])
	}
}

// TestOpenRefusesDamagedFile: a file damaged in what bbolt or Open reads
// of it (its header pages, its free list, the site's buckets) is refused by
// Open, with an error that names the file and what is damaged, and Check
// says the same. Before Open checked what bbolt reads, bbolt panicked on a
// damaged free list and left the file locked until the process ended.
func TestOpenRefusesDamagedFile(t *testing.T) {
	tests := []damageCase{
		{"garbage over the free list", func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			var page int64
			db.View(func(tx *bolt.Tx) error {
				for id := 2; id < int(tx.Size()/4096); id++ {
					if p, _ := tx.Page(id); p != nil && p.Type == "freelist" {
						page = int64(id)
					}
				}
				return nil
			})
			db.Close()
			if page == 0 {
				t.Fatal("no free list page")
			}
			damage(t, path, page*4096, garbage[:4096])
		}, "the free list (page"},
		{"the file cut short", func(t *testing.T, path string) {
			// Half of what its pages need: bbolt grows a file ahead of
			// its pages, so half the file may still hold them all.
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var need int64
			db.View(func(tx *bolt.Tx) error { need = tx.Size(); return nil })
			db.Close()
			if err := os.Truncate(path, need/2); err != nil {
				t.Fatal(err)
			}
		}, "it was cut short"},
		{"both header pages", func(t *testing.T, path string) {
			damage(t, path, 0, garbage[:4096])
			damage(t, path, 4096, garbage[:4096])
		}, "its header pages are not a bbolt database's"},
		{"garbage over the site's own page, which Open reads", overRoot(nil),
			"the buckets of the site (bucket sites/default): assertion failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filledDB(t)
			tt.damage(t, path)
			s, err := Open(Config{Path: path, TZ: "UTC"}, fixedNow)
			if err == nil {
				s.Close()
				t.Fatal("Open took a damaged file")
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v\nwant ErrDamaged, naming %s and %q", err, path, tt.want)
			}
			if err := Check(path); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check: %v, want ErrDamaged naming %q", err, tt.want)
			}
		})
	}
}

// TestDamagedPageSaysWhatWhenRead: a page that Open does not read (it
// reads no more than it must, so that a start costs the same whatever the
// file's size) is found damaged by Check, and a query or a commit that
// reads it fails with what Check says, naming the file, rather than panic
// inside bbolt. Before, the daemon said "serving", then crashed when a
// request or a commit first read the page, and again at every restart.
func TestDamagedPageSaysWhatWhenRead(t *testing.T) {
	readMinutes := func(s *Store) error {
		_, err := s.Minutes(t0, t0.Add(24*time.Hour))
		return err
	}
	readVisitors := func(s *Store) error {
		_, _, err := s.MinuteVisitors(t0)
		return err
	}
	commitMinute := func(s *Store) error {
		b := tally.NewBatch()
		addHit(b, logtally.Hit{Time: t0.Unix(), PageView: true, Visitor: 1, Path: []byte("/")}, 200, 100, false)
		return s.Commit(b)
	}
	tests := []struct {
		damageCase
		read map[string]func(s *Store) error
	}{
		{damageCase{"garbage over the minutes' root page", overRoot(bucketMinutes),
			"per-minute counts (bucket sites/default/minutes): assertion failed"},
			map[string]func(*Store) error{"Minutes": readMinutes, "Commit": commitMinute}},
		{damageCase{"elements of a page that point outside the file, its header intact", func(t *testing.T, path string) {
			// Keys 2 GB past their page: reading one faults, which only a
			// goroutine that asked for it survives (debug.SetPanicOnFault).
			page, size := pageOf(t, path, bucketMinutes)
			var elem [16]byte                                   // flags, pos, ksize, vsize
			binary.LittleEndian.PutUint32(elem[4:], 0x7f000000) // pos
			binary.LittleEndian.PutUint32(elem[8:], 8)
			binary.LittleEndian.PutUint32(elem[12:], 8)
			damage(t, path, page*size+16, bytes.Repeat(elem[:], int(size-16)/16))
		}, "per-minute counts (bucket sites/default/minutes): runtime error: invalid memory address"},
			map[string]func(*Store) error{"MinuteVisitors": readVisitors}},
		{damageCase{"garbage over the elements of a page, its header intact", func(t *testing.T, path string) {
			page, size := pageOf(t, path, bucketMinutes)
			damage(t, path, page*size+16, bytes.Repeat([]byte{0x7f}, int(size)-16))
		}, "per-minute counts (bucket sites/default/minutes)"},
			map[string]func(*Store) error{"MinuteVisitors": readVisitors}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filledDB(t)
			tt.damage(t, path)
			if err := Check(path); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check: %v, want ErrDamaged naming %q", err, tt.want)
			}
			s, err := Open(Config{Path: path, TZ: "UTC"}, fixedNow)
			if err != nil {
				t.Fatalf("Open: %v; it reads none of the damaged page", err)
			}
			defer s.Close()
			var first *DamageError // what the first read found, for every later one
			for name, read := range tt.read {
				err := func() (err error) {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("panic: %v", r)
						}
					}()
					return read(s)
				}()
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: %v\nwant ErrDamaged, naming %s and %q", name, err, path, tt.want)
				}
				// The file is checked once: a retried commit or another
				// request is answered with the same finding, not a new walk.
				var got *DamageError
				if errors.As(err, &got) && first != nil && got != first {
					t.Errorf("%s: the file was checked again; want the damage found first", name)
				}
				if first == nil {
					first = got
				}
				if again := read(s); !errors.As(again, &got) || got != first {
					t.Errorf("%s again: %v; want the damage found first", name, again)
				}
			}
		})
	}
}

// TestPanicNotOfTheFileGoesOn: a panic in a read of a healthy file is a
// bug, not damage: it is not taken for a damaged file.
func TestPanicNotOfTheFileGoesOn(t *testing.T) {
	s, err := Open(Config{Path: filledDB(t), TZ: "UTC"}, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer func() {
		if r := recover(); r != "a bug" {
			t.Errorf("recovered %v, want the panic of the read", r)
		}
	}()
	err = s.view(func(*bolt.Tx) error { panic("a bug") })
	t.Errorf("the read returned %v", err)
}

// TestPanicInPathReadLeavesNoTransaction: a panic while a read pairs the
// path log's counts with its transaction rolls the transaction back. One
// left open would hold bbolt's mapping of the file: the next commit that
// grows the file would wait for it for ever.
func TestPanicInPathReadLeavesNoTransaction(t *testing.T) {
	s, err := Open(Config{Path: filledDB(t), TZ: "UTC"}, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { recover() }()
		s.def.pathsView(func(*bolt.Tx) bool { panic("a bug") }, nil)
	}()
	if n := s.db.Stats().OpenTxN; n != 0 {
		t.Fatalf("%d read transactions left open: the store cannot even close", n)
	}
	s.Close()
}

// TestCheckHealthyFile: a file as the store leaves it has no damage, and
// Check changes nothing in it.
func TestCheckHealthyFile(t *testing.T) {
	path := filledDB(t)
	before, _ := os.ReadFile(path)
	if err := Check(path); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("Check changed the file")
	}
	if err := Check(filepath.Join(t.TempDir(), "none.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check of a missing file: %v, want ErrNotExist", err)
	}
}

// TestOpenRefusesAnotherFile: a file that is no bbolt database (a log
// given as --db, say) is refused, not taken for a damaged database to
// write over.
func TestOpenRefusesAnotherFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(path, bytes.Repeat([]byte(`192.0.2.1 - - [21/Nov/2026:12:00:00 +0000] "GET / HTTP/1.1" 200 5`+"\n"), 200), 0o644)
	before, _ := os.ReadFile(path)
	if _, err := Open(Config{Path: path}, nil); !errors.Is(err, ErrDamaged) {
		t.Errorf("Open of a log file: %v, want ErrDamaged", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("Open changed the file")
	}
}

// BenchmarkCheck is the cost of Check (`logtally check`), on the file of
// TestCheckHealthyFile; docs/performance.md gives it for a 38 MB file (bench/dbsize).
func BenchmarkCheck(b *testing.B) {
	path := os.Getenv("LOGTALLY_CHECK_DB")
	if path == "" {
		b.Skip("LOGTALLY_CHECK_DB: a database file to check")
	}
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(info.Size())
	for b.Loop() {
		if err := Check(path); err != nil {
			b.Fatal(err)
		}
	}
}
