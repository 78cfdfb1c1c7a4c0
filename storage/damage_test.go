package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	began := time.Now()
	if err := Check(path); err != nil {
		t.Fatalf("Check of the whole file: %v", err)
	}
	t.Logf("Check of the whole file took %s", time.Since(began))
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

// damaged20 damages 20 record values of a copy of bigDB chosen at random,
// and returns its path and how each is named.
func damaged20(t *testing.T) (path string, names []string) {
	t.Helper()
	path = bigDB(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 30))
	values := recordValues(t, path)
	for _, i := range rng.Perm(len(values))[:20] {
		v := values[i]
		if _, err := damagetest.Overwrite(path, v, rng); err != nil {
			t.Fatal(err)
		}
		names = append(names, fmt.Sprintf("(bucket %s), %s", strings.Join(v.Bucket, "/"), keyName(strings.Join(v.Bucket, "/"), v.Key)))
	}
	return path, names
}

// TestQueriesSkipDamagedRecords: every query that meets a damaged record
// answers what it can, leaving the record out and naming it (a series
// marks its point), and Damage, then Verify, say what is damaged. Before,
// a series that met one failed whole with "record: corrupt database
// value", which the API answered with a 500.
func TestQueriesSkipDamagedRecords(t *testing.T) {
	path, names := damaged20(t)
	s, err := Open(Config{Path: path}, func() time.Time { return t0.Add(7 * 24 * time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	from, to := t0, t0.Add(6*24*time.Hour)
	var named []string
	for _, site := range []string{logtally.DefaultSite, "shop.example.org"} {
		si, _ := s.Site(site)
		for _, step := range []time.Duration{time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour} {
			series, err := si.Series(from, to, step)
			if err != nil {
				t.Fatalf("%s: series by %s: %v", site, step, err)
			}
			marked := 0
			for _, p := range series.Points {
				if p.Damaged {
					marked++
				}
			}
			if marked == 0 != (len(series.Damaged) == 0) {
				t.Errorf("%s: series by %s names %d damaged records and marks %d points", site, step, len(series.Damaged), marked)
			}
			named = append(named, series.Damaged...)
		}
		pages, err := si.Pages(from, to, 10)
		if err != nil || len(pages.Pages) == 0 {
			t.Errorf("%s: pages: %v, %d pages", site, err, len(pages.Pages))
		}
		if _, err := si.Totals(from, to); err != nil {
			t.Errorf("%s: totals: %v", site, err)
		}
		if _, err := si.Minutes(from, to); err != nil {
			t.Errorf("%s: minutes: %v", site, err)
		}
	}
	for _, name := range names {
		if !slices.ContainsFunc(named, func(p string) bool { return strings.Contains(p, name) }) {
			t.Errorf("no series names %s", name)
		}
	}
	var damage *DamageError
	if err := s.Damage(); !errors.As(err, &damage) || len(damage.Problems)+damage.More != 20 || damage.Path != path {
		t.Errorf("Damage = %v, want the 20 records, and the file", err)
	}
	s.Close()

	fresh, err := Open(Config{Path: path}, func() time.Time { return t0.Add(7 * 24 * time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.Damage(); err != nil {
		t.Fatalf("Damage before any query or Verify = %v", err)
	}
	fresh.Verify(context.Background(), slog.New(slog.DiscardHandler))
	if err := fresh.Damage(); !errors.As(err, &damage) || len(damage.Problems)+damage.More != 20 {
		t.Errorf("Damage after Verify = %v, want the 20 records", err)
	}
}
