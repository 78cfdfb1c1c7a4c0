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

// pageOf returns the root page of a bucket of the site, and the file's
// page size.
func pageOf(t *testing.T, path string, bucket []byte) (page, size int64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		page = int64(tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)).Bucket(bucket).Root())
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

// TestOpenRefusesDamagedFile: a file with garbage in a page is refused by
// Open, with an error that names the file and what is damaged, and Check
// says the same. Before, Open took it, and the first query or commit that
// read the page panicked inside bbolt: the daemon said "serving", then
// crashed, and crashed again at every restart.
func TestOpenRefusesDamagedFile(t *testing.T) {
	garbage := bytes.Repeat([]byte("garbage!"), 512) // a page of it
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string // in the error
	}{
		{"garbage over the minutes' root page", func(t *testing.T, path string) {
			page, size := pageOf(t, path, bucketMinutes)
			damage(t, path, page*size, garbage[:size])
		}, "per-minute counts (bucket sites/default/minutes)"},
		{"elements of a page that point outside the file, its header intact", func(t *testing.T, path string) {
			// Keys 2 GB past their page: reading one faults, which only a
			// goroutine that asked for it survives (debug.SetPanicOnFault).
			page, size := pageOf(t, path, bucketVisitors)
			var elem [16]byte                                   // flags, pos, ksize, vsize
			binary.LittleEndian.PutUint32(elem[4:], 0x7f000000) // pos
			binary.LittleEndian.PutUint32(elem[8:], 8)
			binary.LittleEndian.PutUint32(elem[12:], 8)
			damage(t, path, page*size+16, bytes.Repeat(elem[:], int(size-16)/16))
		}, "visitor sets of recent minutes (bucket sites/default/visitors): runtime error: invalid memory address"},
		{"garbage over the elements of a page, its header intact", func(t *testing.T, path string) {
			page, size := pageOf(t, path, bucketVisitors)
			damage(t, path, page*size+16, bytes.Repeat([]byte{0x7f}, int(size)-16))
		}, "visitor sets of recent minutes (bucket sites/default/visitors)"},
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
			info, _ := os.Stat(path)
			if err := os.Truncate(path, info.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, "it was cut short"},
		{"both header pages", func(t *testing.T, path string) {
			damage(t, path, 0, garbage[:4096])
			damage(t, path, 4096, garbage[:4096])
		}, "its header pages are not a bbolt database's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filledDB(t)
			tt.damage(t, path)
			s, err := Open(Config{Path: path, TZ: "UTC"}, fixedNow)
			if err == nil {
				defer s.Close()
				read := func() (err error) {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("panic: %v", r)
						}
					}()
					_, err = s.Minutes(t0, t0.Add(24*time.Hour))
					return err
				}
				t.Fatalf("Open took a damaged file; reading it: %v", read())
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

// BenchmarkCheck is the cost of the check at every start, on the file of
// TestCheckHealthyFile; README gives it for a 40 MB file (bench/dbsize).
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
