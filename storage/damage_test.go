package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally"
	damagetest "github.com/logtally/logtally/internal/damage"
	"github.com/logtally/logtally/tally"
)

// bigDB returns the path of a new copy of a database of about 32 MB: ten
// days of busy minutes of two sites, as the store writes them.
func bigDB(t *testing.T) string {
	t.Helper()
	big.Do(func() { big.data, big.err = makeBigDB() })
	if big.err != nil {
		t.Fatal(big.err)
	}
	path := filepath.Join(t.TempDir(), "logtally.db")
	if err := os.WriteFile(path, big.data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// big is the database bigDB copies, made once.
var big struct {
	sync.Once
	data []byte
	err  error
}

func makeBigDB() ([]byte, error) {
	dir, err := os.MkdirTemp("", "big")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s, err := Open(Config{Path: filepath.Join(dir, "db"), TZ: "UTC"}, func() time.Time { return t0.Add(7 * 24 * time.Hour) })
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for hour := range 6 * 24 {
		var bs []*tally.Batch
		for _, site := range []string{logtally.DefaultSite, "shop.example.org"} {
			b := tally.NewSiteBatch(site)
			for m := range 60 {
				for range 40 {
					sec := t0.Unix() + int64(hour*3600+m*60+rng.IntN(60))
					h := logtally.Hit{Time: sec, PageView: true, Visitor: rng.Uint64N(5000),
						Path: fmt.Appendf(nil, "/page/%d", rng.IntN(300))}
					addHit(b, h, 200, 1000, false)
				}
			}
			b.SetPosition("fp:"+site, int64(hour+1)*1000)
			bs = append(bs, b)
		}
		if err := s.Commit(bs...); err != nil {
			return nil, err
		}
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, "db"))
}

// recordValues returns every minute, hour and day of every site of the
// database at path, where they lie in its pages.
func recordValues(t *testing.T, path string) []damagetest.Value {
	t.Helper()
	var out []damagetest.Value
	for _, site := range []string{logtally.DefaultSite, "shop.example.org"} {
		for _, b := range []string{"minutes", "hours", "days"} {
			vs, err := damagetest.Values(path, "sites", site, b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, vs...)
		}
	}
	return out
}

// TestCheckFindsDamagedRecords: twenty record values, chosen at random
// among the leaf pages in use of a 32 MB database, each with 1 to 4
// bytes overwritten in place (page headers, keys and bbolt's structure
// left whole), are every one found by Check, which names each by its
// bucket and key. Before, Check read every page but decoded no value, and
// found none of them: bbolt's own check sees only its structure.
func TestCheckFindsDamagedRecords(t *testing.T) {
	path := bigDB(t)
	info, _ := os.Stat(path)
	t.Logf("database of %.1f MB", float64(info.Size())/1e6)
	if err := Check(path); err != nil {
		t.Fatalf("Check of the whole file: %v", err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 30))
	values := recordValues(t, path)
	var want []string
	for _, i := range rng.Perm(len(values))[:20] {
		v := values[i]
		if _, err := damagetest.Overwrite(path, v, rng); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("(bucket %s), %s", strings.Join(v.Bucket, "/"), keyName(strings.Join(v.Bucket, "/"), v.Key)))
	}
	err := Check(path)
	var de *DamageError
	if !errors.As(err, &de) || len(de.Problems)+de.More != 20 {
		t.Fatalf("Check = %v, want the 20 damaged records", err)
	}
	s, err := OpenReadOnly(Config{Path: path}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	problems, more, err := check(s.db, info.Size())
	s.Close()
	if err != nil || more != 0 {
		t.Fatal(err, more)
	}
	for _, w := range want {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("no problem names %s; found:\n%s", w, strings.Join(problems, "\n"))
		}
	}
}
