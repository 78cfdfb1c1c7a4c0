package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"github.com/logtally/logtally/internal/golden"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fixedNow is a clock a day after t0, so that nothing in the tests expires.
func fixedNow() time.Time { return t0.Add(24 * time.Hour) }

// mustOpen opens a store in a temporary directory (unless cfg.Path is
// set), with days in UTC and the clock fixedNow.
func mustOpen(t *testing.T, cfg Config) *Store {
	t.Helper()
	return mustOpenAt(t, cfg, fixedNow)
}

// mustOpenAt is mustOpen with the clock now.
func mustOpenAt(t *testing.T, cfg Config, now func() time.Time) *Store {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "db")
	}
	if cfg.TZ == "" {
		cfg.TZ = "UTC"
	}
	s, err := Open(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// hours returns the stored hours in [from, to], oldest first.
func (s *Store) hours(from, to time.Time) ([]logtally.Bucket, error) {
	var out []logtally.Bucket
	err := s.db.View(func(tx *bolt.Tx) error {
		return scan(s.def.bucket(tx, bucketHours), u64(uint64(logtally.FloorDiv(from.Unix(), 3600))),
			u64(uint64(logtally.FloorDiv(to.Unix(), 3600))), false, func(k []byte, r *record) {
				out = append(out, logtally.Bucket{Time: time.Unix(int64(binary.BigEndian.Uint64(k))*3600, 0).UTC(), Counts: r.Counts})
			}, nil)
	})
	return out, err
}

// days returns the days in [from, to], oldest first: those stored, and
// the lazy ones made from their hours (see lazyday.go).
func (s *Store) days(from, to time.Time) ([]logtally.Bucket, error) {
	var out []logtally.Bucket
	err := s.db.View(func(tx *bolt.Tx) error {
		lo, hi := dayKey(from, s.loc), dayKey(to, s.loc)
		add := func(k []byte, r *record) {
			out = append(out, logtally.Bucket{Time: dayStart(k, s.loc), Counts: r.Counts})
		}
		if err := scan(s.def.bucket(tx, bucketDays), lo, hi, false, add, nil); err != nil {
			return err
		}
		var err error
		s.def.lazyDays(tx, lo, hi, func(day, v []byte) {
			var r record
			if err == nil {
				err = r.decode(v, false)
				add(day, &r)
			}
		}, func(_, _ []byte, e error) { err = e })
		return err
	})
	slices.SortFunc(out, func(a, b logtally.Bucket) int { return a.Time.Compare(b.Time) })
	return out, err
}

// addHit adds h to b with a status and a byte count.
func addHit(b *tally.Batch, h logtally.Hit, status int, bytes int64, live bool) {
	h.Status, h.Bytes = status, bytes
	b.Add(&h, live)
}

func page(sec int64, visitor uint64, path string) logtally.Hit {
	return logtally.Hit{Time: t0.Unix() + sec, PageView: true, Visitor: visitor, Path: []byte(path)}
}

func asset(sec int64) logtally.Hit {
	return logtally.Hit{Time: t0.Unix() + sec, Path: []byte("/app.css")}
}

func commit(t *testing.T, s *Store, fill func(b *tally.Batch)) {
	t.Helper()
	b := tally.NewBatch()
	fill(b)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
}

func TestCommitMergesMinutes(t *testing.T) {
	s := mustOpen(t, Config{})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/a"), 200, 100, false)
		addHit(b, page(10, 2, "/b"), 200, 100, false)
		addHit(b, asset(59), 304, 0, false)
		b.Reject(0)
		addHit(b, page(60, 1, "/a"), 200, 10, false) // next minute
		b.SetPosition("a.log", 100)
	})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(30, 2, "/b"), 200, 1, false) // visitor 2 again in minute 0: still 2 distinct
		addHit(b, page(31, 3, "/a"), 404, 1, false)
		b.SetPosition("a.log", 180)
	})

	got, err := s.Minutes(t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []logtally.Bucket{
		{Time: t0, Counts: logtally.Counts{Requests: 5, PageViews: 4, Visitors: 3, Status: [5]int64{0, 3, 1, 1, 0},
			Bytes: 202, Rejected: 1, Top: []logtally.PageCount{{Path: "/a", PageViews: 2}, {Path: "/b", PageViews: 2}}}},
		{Time: t0.Add(time.Minute), Counts: logtally.Counts{Requests: 1, PageViews: 1, Visitors: 1, Status: [5]int64{0, 1, 0, 0, 0},
			Bytes: 10, Top: []logtally.PageCount{{Path: "/a", PageViews: 1}}}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("minutes =\n%+v\nwant\n%+v", got, want)
	}
	if off, ok, err := s.Position("a.log"); err != nil || !ok || off != 180 {
		t.Errorf("Position = %d %v %v, want 180 true nil", off, ok, err)
	}
	if _, ok, _ := s.Position("b.log"); ok {
		t.Error("Position of an unknown file reported ok")
	}
}

func TestRollupsEqualSumOfMinutes(t *testing.T) {
	s := mustOpen(t, Config{})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 { // several batches, each over the whole span: late lines included
		commit(t, s, func(b *tally.Batch) {
			for range 3000 {
				sec := int64(rng.IntN(3 * 3600))
				if rng.IntN(3) == 0 {
					addHit(b, asset(sec), 200+100*rng.IntN(4), int64(rng.IntN(5000)), false)
				} else {
					addHit(b, page(sec, uint64(rng.IntN(500)), fmt.Sprintf("/p%d", rng.IntN(30))), 200, int64(rng.IntN(5000)), false)
				}
			}
		})
	}
	minutes, _ := s.Minutes(t0, t0.Add(3*time.Hour))
	hours, _ := s.hours(t0, t0.Add(3*time.Hour))
	days, _ := s.days(t0, t0)
	if len(hours) != 3 || len(days) != 1 {
		t.Fatalf("%d hours, %d days; want 3 and 1", len(hours), len(days))
	}
	sum := func(ms []logtally.Bucket) logtally.Counts {
		var c logtally.Counts
		for _, m := range ms {
			c.Requests += m.Requests
			c.PageViews += m.PageViews
			c.Bytes += m.Bytes
			c.Rejected += m.Rejected
			for i := range c.Status {
				c.Status[i] += m.Status[i]
			}
		}
		return c
	}
	same := func(a, b logtally.Counts) bool {
		return a.Requests == b.Requests && a.PageViews == b.PageViews && a.Bytes == b.Bytes &&
			a.Rejected == b.Rejected && a.Status == b.Status
	}
	for _, h := range hours {
		var in []logtally.Bucket
		for _, m := range minutes {
			if m.Time.Truncate(time.Hour).Equal(h.Time) {
				in = append(in, m)
			}
		}
		if want := sum(in); !same(h.Counts, want) {
			t.Errorf("hour %s = %+v, want the sum of its minutes %+v", h.Time, h.Counts, want)
		}
	}
	if want := sum(minutes); !same(days[0].Counts, want) {
		t.Errorf("day = %+v, want the sum of its minutes %+v", days[0].Counts, want)
	}
}

func TestHourlyVisitorsWithinTwoPercent(t *testing.T) {
	s := mustOpen(t, Config{})
	const n = 100_000
	rng := rand.New(rand.NewPCG(3, 4))
	for part := range 4 {
		commit(t, s, func(b *tally.Batch) {
			for i := part * n / 4; i < (part+1)*n/4; i++ {
				v := rng.Uint64()
				addHit(b, page(int64(rng.IntN(3600)), v, "/"), 200, 0, false)
				addHit(b, page(int64(rng.IntN(3600)), v, "/"), 200, 0, false) // a repeat visit
			}
		})
	}
	hours, err := s.hours(t0, t0)
	if err != nil || len(hours) != 1 {
		t.Fatalf("hours = %v, %v", hours, err)
	}
	got := hours[0].Visitors
	if e := math.Abs(float64(got-n)) / n; e > 0.02 {
		t.Errorf("hourly visitors = %d, want within 2%% of %d (off by %.2f%%)", got, n, 100*e)
	}
	if !hours[0].Approximate {
		t.Error("hourly visitors not marked approximate")
	}
}

func TestLateLineAfterCompactionIsApproximate(t *testing.T) {
	now := fixedNow()
	s := mustOpenAt(t, Config{ExactVisitorsSpan: time.Hour}, func() time.Time { return now })
	commit(t, s, func(b *tally.Batch) { addHit(b, page(0, 1, "/"), 200, 0, false) })
	commit(t, s, func(b *tally.Batch) { addHit(b, page(0, 2, "/"), 200, 0, false) }) // still exact: set kept
	commit(t, s, func(b *tally.Batch) { addHit(b, page(3*3600, 3, "/"), 200, 0, false) })
	now = now.Add(recentWrite) // the writes are no longer recent
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.MinuteVisitors(t0); ok {
		t.Fatal("visitor set of an old minute survived compaction")
	}
	m, _ := s.Minutes(t0, t0)
	if m[0].Visitors != 2 || m[0].Approximate {
		t.Fatalf("compacted minute = %+v, want 2 exact visitors", m[0].Counts)
	}
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(5, 1, "/"), 200, 0, false)
		addHit(b, page(6, 9, "/"), 200, 0, false)
	})
	m, _ = s.Minutes(t0, t0)
	if !m[0].Approximate || m[0].Visitors != 3 || m[0].PageViews != 4 {
		t.Errorf("late lines into a compacted minute: %+v, want 4 page views, ~3 visitors, approximate", m[0].Counts)
	}
	series, _ := s.Series(t0, t0, time.Minute)
	if !series.Approximate {
		t.Error("series over an approximate minute does not say so")
	}
}

func TestPathCountsCapsAndFolding(t *testing.T) {
	now := fixedNow()
	s := mustOpenAt(t, Config{MaxPaths: 2, MaxDayPaths: 2}, func() time.Time { return now })
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/a"), 200, 0, false)
		addHit(b, page(1, 1, "/a"), 200, 0, false)
		addHit(b, page(2, 1, "/b"), 200, 0, false)
		addHit(b, page(24*3600, 1, "/c"), 200, 0, false) // the next day
	})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(3, 1, "/c"), 200, 0, false) // the day's cap is reached: /c counts as other
		addHit(b, page(4, 1, "/d"), 200, 0, false)
	})
	check := func(when string, want []logtally.PathCount) {
		t.Helper()
		got, err := s.PathCounts([]string{"/a", "/b", "/c", "/d", logtally.OtherPath}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: PathCounts = %+v\nwant %+v", when, got, want)
		}
	}
	want := []logtally.PathCount{{Path: "/a", Day: 2, Total: 2}, {Path: "/b", Day: 1, Total: 1}, {Path: "/c", Day: 0, Total: 1}, {Path: "/d", Day: 0, Total: 0}, {Path: logtally.OtherPath, Day: 2, Total: 2}}
	check("before folding", want)

	// The first day is over: folding it into the all-time totals changes no
	// answer.
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after folding the first day", want)

	// The second day is folded too; the all-time cap (2 paths) sends /c to other.
	now = now.Add(24 * time.Hour)
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after folding both days", []logtally.PathCount{{Path: "/a", Day: 2, Total: 2}, {Path: "/b", Day: 1, Total: 1}, {Path: "/c", Day: 0, Total: 0}, {Path: "/d", Day: 0, Total: 0}, {Path: logtally.OtherPath, Day: 2, Total: 3}})

	// A late line for a folded day reaches its day and the all-time totals.
	commit(t, s, func(b *tally.Batch) { addHit(b, page(5, 1, "/a"), 200, 0, false) })
	check("after a late line", []logtally.PathCount{{Path: "/a", Day: 3, Total: 3}, {Path: "/b", Day: 1, Total: 1}, {Path: "/c", Day: 0, Total: 0}, {Path: "/d", Day: 0, Total: 0}, {Path: logtally.OtherPath, Day: 2, Total: 3}})
}

func TestSeries(t *testing.T) {
	s := mustOpen(t, Config{})
	commit(t, s, func(b *tally.Batch) {
		for i := range int64(20) {
			// One page view a minute from three visitors, with hashes spread
			// over 64 bits as real visitor hashes are.
			addHit(b, page(i*60, uint64(i%3+1)*0x9e3779b97f4a7c15, "/"), 200, 100, false)
			if i%5 == 0 {
				addHit(b, asset(i*60), 404, 10, false) // a request, not a page view
			}
		}
	})
	st := func(c2, c4 int64) [5]int64 { return [5]int64{0, c2, 0, c4, 0} }
	tests := []struct {
		step   time.Duration
		points int
		first  logtally.Point
		approx bool
	}{
		{time.Minute, 20, logtally.Point{Time: t0, Requests: 2, PageViews: 1, Visitors: 1, Status: st(1, 1), Bytes: 110}, false},
		{5 * time.Minute, 4, logtally.Point{Time: t0, Requests: 6, PageViews: 5, Visitors: 3, Status: st(5, 1), Bytes: 510}, true},
		{time.Hour, 1, logtally.Point{Time: t0, Requests: 24, PageViews: 20, Visitors: 3, Status: st(20, 4), Bytes: 2040}, true},
		{24 * time.Hour, 1, logtally.Point{Time: t0.Truncate(24 * time.Hour), Requests: 24, PageViews: 20, Visitors: 3, Status: st(20, 4), Bytes: 2040}, true},
	}
	for _, tt := range tests {
		t.Run(tt.step.String(), func(t *testing.T) {
			got, err := s.Series(t0, t0.Add(19*time.Minute), tt.step)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Points) != tt.points || got.Points[0] != tt.first || got.Approximate != tt.approx {
				t.Errorf("%d points, first %+v, approximate %v; want %d, %+v, %v",
					len(got.Points), got.Points[0], got.Approximate, tt.points, tt.first, tt.approx)
			}
		})
	}
	if _, err := s.Series(t0, t0.Add(logtally.MaxPoints*time.Minute), time.Minute); !errors.Is(err, logtally.ErrTooManyPoints) {
		t.Errorf("10,001 points: err = %v, want logtally.ErrTooManyPoints", err)
	}
}

// TestWindowSecondKeepsTopPaths commits a second with more distinct paths
// than a stored second keeps, over two commits: the most viewed are kept
// with exact counts, and the second's totals stay whole.
func TestWindowSecondKeepsTopPaths(t *testing.T) {
	s := mustOpen(t, Config{})
	const extra = 700
	fill := func(from, to int) func(b *tally.Batch) {
		return func(b *tally.Batch) {
			for i := from; i < to; i++ {
				addHit(b, page(0, uint64(i), fmt.Sprintf("/once/%d", i)), 200, 100, true)
				if i%2 == 0 {
					addHit(b, page(0, uint64(i), "/popular"), 200, 100, true)
				}
			}
		}
	}
	commit(t, s, fill(0, MaxSecondPaths))
	commit(t, s, fill(MaxSecondPaths, MaxSecondPaths+extra))
	got, err := s.WindowSeconds(0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	n := MaxSecondPaths + extra
	if len(got) != 1 || got[0].PageViews != int64(n+n/2) || len(got[0].Visitors) != n {
		t.Fatalf("seconds = %d, page views %d, visitors %d; want 1, %d, %d", len(got), got[0].PageViews, len(got[0].Visitors), n+n/2, n)
	}
	if p := got[0].Paths; len(p) != MaxSecondPaths || p["/popular"] != int64(n/2) {
		t.Errorf("%d paths kept, /popular = %d; want %d, %d", len(p), p["/popular"], MaxSecondPaths, n/2)
	}
}

func TestWindowSeconds(t *testing.T) {
	s := mustOpen(t, Config{})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/a"), 200, 0, true)
		addHit(b, page(0, 2, "/a"), 200, 0, true)
		addHit(b, page(1, 1, "/b"), 200, 0, true)
		addHit(b, page(2, 1, "/x"), 200, 0, false) // not live: not kept per second
	})
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(1, 3, "/b"), 200, 0, true)
		b.SetWindowStart(t0.Unix() + 1) // second 0 has left the window
	})
	got, err := s.WindowSeconds(0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	want := []logtally.Second{{Time: t0.Unix() + 1, Requests: 2, PageViews: 2, Visitors: []uint64{1, 3},
		Paths: map[string]int64{"/b": 2}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("seconds = %+v, want %+v", got, want)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(Config{Path: path}, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, func(b *tally.Batch) { addHit(b, page(0, 9, "/"), 200, 0, false) })
	s.Close()

	s = mustOpen(t, Config{Path: path})
	if got, _ := s.Minutes(t0, t0); len(got) != 1 || got[0].Requests != 1 {
		t.Errorf("minutes after reopen = %+v", got)
	}
}

func TestRefusesUnknownSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket(bucketMeta)
		return b.Put(keySchema, u64(SchemaVersion+1))
	})
	db.Close()
	before, _ := os.ReadFile(path)
	if _, err := Open(Config{Path: path}, nil); !errors.Is(err, ErrSchema) {
		t.Fatalf("Open = %v, want ErrSchema", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("refused file was modified")
	}
}

// TestRecordEncodingGolden pins the stored layout: a change to it must come
// with a new encoding version.
func TestRecordEncodingGolden(t *testing.T) {
	r := record{Counts: logtally.Counts{Requests: 300, PageViews: 7, Visitors: 3, Approximate: true,
		Status: [5]int64{0, 250, 20, 25, 5}, Bytes: 123456, Rejected: 2,
		Top: []logtally.PageCount{{Path: "/a", PageViews: 4}, {Path: "/b/c", PageViews: 2}}, Other: 1}}
	for _, v := range []uint64{1, 5, 1 << 63} {
		r.sketch().InsertHash(v)
	}
	enc, err := r.encode()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "record.golden"), []byte(hex.Dump(enc)), *update)
	var back record
	if err := back.decode(enc, true); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back.Counts) != fmt.Sprint(r.Counts) || back.hll.Estimate() != 3 {
		t.Errorf("round trip = %+v, want %+v", back.Counts, r.Counts)
	}
	for i := range len(enc) {
		if err := back.decode(enc[:i], true); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode of %d of %d bytes = %v, want ErrCorrupt", i, len(enc), err)
		}
	}
	if err := back.decode(append(enc, 0), true); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decode with a trailing byte = %v, want ErrCorrupt", err)
	}
}

// TestRecordEncodedToSize: an encoded record takes exactly its room, for a
// commit of many sites holds tens of thousands of them until it writes.
func TestRecordEncodedToSize(t *testing.T) {
	big := record{Counts: logtally.Counts{Requests: 1 << 62, PageViews: 1 << 40, Visitors: 2, Bytes: 1 << 50,
		Rejected: 1 << 20, Status: [5]int64{1, 1 << 30, 1 << 14, 1 << 7, 127},
		Top: []logtally.PageCount{{Path: strings.Repeat("/p", 100), PageViews: 1 << 35}, {Path: "/", PageViews: 1}}, Other: 1 << 45}}
	withSet := big
	withSet.set, withSet.denseSet = encodeHashes([]uint64{3, 7}), true
	withSketch := big
	for _, v := range []uint64{1, 5, 1 << 63} {
		withSketch.sketch().InsertHash(v)
	}
	for name, r := range map[string]record{"empty": {}, "counts": big, "set": withSet, "sketch": withSketch} {
		enc, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) != cap(enc) {
			t.Errorf("%s: %d bytes in a slice of %d", name, len(enc), cap(enc))
		}
		var back record
		if err := back.decode(enc, true); err != nil || fmt.Sprint(back.Counts) != fmt.Sprint(r.Counts) {
			t.Errorf("%s: round trip = %+v, %v; want %+v", name, back.Counts, err, r.Counts)
		}
	}
	set := withSet.encodeSet([]uint64{3, 7, 9})
	if len(set) != cap(set) {
		t.Errorf("encodeSet: %d bytes in a slice of %d", len(set), cap(set))
	}
}

func FuzzDecodeRecord(f *testing.F) {
	r := record{Counts: logtally.Counts{Requests: 1, Top: []logtally.PageCount{{Path: "/", PageViews: 1}}}}
	enc, _ := r.encode()
	f.Add(enc)
	r.Visitors, r.set = 2, encodeHashes([]uint64{3, 7})
	enc, _ = r.encode()
	f.Add(enc) // a minute that holds its visitor set
	f.Fuzz(func(t *testing.T, b []byte) {
		var r record
		if err := r.decode(b, true); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode error %v is not ErrCorrupt", err)
		}
		var s second
		if err := s.decode(b); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("second decode error %v is not ErrCorrupt", err)
		}
		if err := decodeLog(b, func([]byte, int64) {}); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("path log decode error %v is not ErrCorrupt", err)
		}
	})
}

func TestSortHashes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var sc scratch
	tests := []struct {
		name string
		gen  func() uint64
		n    int
	}{
		{"few", rng.Uint64, 100},
		{"uniform", rng.Uint64, 5000},
		{"repeats", func() uint64 { return rng.Uint64N(300) * 0x9e3779b97f4a7c15 }, 5000},
		{"skewed", func() uint64 { return rng.Uint64N(1 << 20) }, 5000}, // all in the first bucket
		{"extremes", func() uint64 { return []uint64{0, math.MaxUint64}[rng.IntN(2)] }, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]uint64, tt.n)
			for i := range got {
				got[i] = tt.gen()
			}
			want := slices.Sorted(slices.Values(got))
			sortHashes(got, &sc)
			if !slices.Equal(got, want) {
				t.Error("sortHashes disagrees with slices.Sort")
			}
		})
	}
}

// TestMergeTopEqualsFullSort checks the top pages a minute keeps against
// sorting every path, with few distinct view counts so that ties are many,
// and paths short and long, many alike in their first 8 bytes or more, one
// the start of another.
func TestMergeTopEqualsFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var pool []string
	for k := range 60 {
		pool = append(pool, fmt.Sprintf("/%d", k), fmt.Sprintf("/items/%d", k), fmt.Sprintf("/blog/2026/11/%d", k),
			fmt.Sprintf("/blog/2026/11/%d/", k))
	}
	for round := range 400 {
		n := 1 + rng.IntN(20)
		var r record
		all := make(map[string]int64)
		var other int64
		for range 1 + rng.IntN(3) { // merges into the same minute
			var delta []logtally.PageCount
			for i := range rng.IntN(300) {
				p := pool[rng.IntN(len(pool))]
				if slices.ContainsFunc(delta, func(pc logtally.PageCount) bool { return pc.Path == p }) {
					continue
				}
				delta = append(delta, logtally.PageCount{Path: p, PageViews: int64(1 + rng.IntN(1+i%4))})
			}
			// What the minute must keep: the n first of everything it
			// kept and the delta, in byViews order; paths sent to Other
			// earlier stay there.
			want := slices.Clone(r.Top)
			for _, pc := range delta {
				if j := slices.IndexFunc(want, func(w logtally.PageCount) bool { return w.Path == pc.Path }); j >= 0 {
					want[j].PageViews += pc.PageViews
				} else {
					want = append(want, pc)
				}
				all[pc.Path] += pc.PageViews
			}
			slices.SortFunc(want, byViews)
			wantOther := other
			if len(want) > n {
				for _, pc := range want[n:] {
					wantOther += pc.PageViews
				}
				want = want[:n]
			}
			r.mergeTop(delta, n)
			if !slices.Equal(r.Top, want) || r.Other != wantOther {
				t.Fatalf("round %d: top %v other %d, want %v other %d", round, r.Top, r.Other, want, wantOther)
			}
			other = wantOther
		}
	}
}

// TestTallyTakeIDs checks that a tally gives back every count it took, and
// is empty after, whether it takes them in the order counted (few numbers
// touched) or in number order (many).
func TestTallyTakeIDs(t *testing.T) {
	for _, touched := range []int{3, 500} {
		t.Run(fmt.Sprint(touched), func(t *testing.T) {
			var tl pathTally
			tl.grow(1000)
			rng := rand.New(rand.NewPCG(13, uint64(touched)))
			want := make(map[int32]int64)
			for range 3 * touched {
				id := int32(rng.IntN(touched) * (1000 / touched))
				tl.add(id, 2)
				want[id] += 2
			}
			got := make(map[int32]int64)
			for _, pd := range tl.takeIDs(nil) {
				if _, ok := got[pd.id]; ok {
					t.Fatalf("path %d taken twice", pd.id)
				}
				got[pd.id] = pd.n
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("took %v, want %v", got, want)
			}
			if len(tl.touched) != 0 || slices.ContainsFunc(tl.n, func(n int64) bool { return n != 0 }) {
				t.Error("the tally is not empty after takeIDs")
			}
		})
	}
}

// TestStreamSinceSurvivesReopen: where a followed path's stream starts is
// stored apart from the file positions, to the nanosecond, per path, and
// is there after a restart; a path never followed has none.
func TestStreamSinceSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path})
	a := time.Date(2026, 11, 21, 3, 4, 5, 123456789, time.UTC)
	b := a.Add(-36 * time.Hour)
	if err := s.SetStreamSince("/var/log/nginx/access.log", a); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStreamSince("/var/log/nginx/other.log", b); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStreamSince("/var/log/nginx/access.log", b); err != nil { // moved back
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, Config{Path: path})
	for _, tt := range []struct {
		path string
		want time.Time
		ok   bool
	}{
		{"/var/log/nginx/access.log", b, true},
		{"/var/log/nginx/other.log", b, true},
		{"/var/log/nginx/never.log", time.Time{}, false},
	} {
		got, ok, err := s.StreamSince(tt.path)
		if err != nil || ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("StreamSince(%s) = %v, %v, %v; want %v, %v", tt.path, got, ok, err, tt.want, tt.ok)
		}
	}
}

// TestRefusesForeignFile: another program's bbolt file is refused, naming
// what is not logtally's, and left as it was, byte for byte. Before, Open
// took it and laid out logtally's buckets beside the program's.
func TestRefusesForeignFile(t *testing.T) {
	for _, noFreelistSync := range []bool{false, true} {
		t.Run(fmt.Sprint("NoFreelistSync=", noFreelistSync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: noFreelistSync})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				for _, name := range []string{"users", "meta"} {
					b, err := tx.CreateBucket([]byte(name))
					if err != nil {
						return err
					}
					if err := b.Put([]byte("alice"), []byte("admin")); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			before, _ := os.ReadFile(path)
			_, err = Open(Config{Path: path}, nil)
			if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), `users`) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open = %v, want ErrForeign naming %s and its bucket users", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Error("the refused file was changed")
			}
		})
	}
}

// TestRecordChecksumCatchesChanges: a record changed on disk, in any byte
// and to any value, is refused as corrupt, where one of encoding 1 (before
// schema 5) decoded with a changed count or sketch as if it were whole; and
// a record of encoding 1 is still read.
func TestRecordChecksumCatchesChanges(t *testing.T) {
	r := record{Counts: logtally.Counts{Requests: 300, PageViews: 7, Visitors: 3, Status: [5]int64{0, 300},
		Top: []logtally.PageCount{{Path: "/a", PageViews: 7}}}}
	for _, v := range []uint64{1, 5, 1 << 63} {
		r.sketch().InsertHash(v)
	}
	enc, err := r.encode()
	if err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		for _, x := range []byte{0x01, 0x80, 0xff, 0x5a} {
			changed := bytes.Clone(enc)
			changed[i] ^= x
			var back record
			if err := back.decode(changed, true); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d of %d xored with %#x: decode = %v, %+v; want ErrCorrupt", i, len(enc), x, err, back.Counts)
			}
		}
	}
	old, _ := hex.DecodeString("0101ac020703c0c4070200fa01141905" + "02022f6104042f622f6302012002" + "0e00" +
		"0100000003000000" + "4f0000004b800000" + "51000000000000000000000000") // the golden record of encoding 1
	var back record
	if err := back.decode(old, true); err != nil || back.Requests != 300 || back.hll.Estimate() != 3 {
		t.Errorf("a record of encoding 1: %v, %+v", err, back.Counts)
	}
}

// TestCommitMergesMinutesBeforeTheLast: a commit merges its minutes into
// those stored, whether at, before or after the site's last stored minute
// (after which it looks nothing up): their counts and exact visitors add
// up.
func TestCommitMergesMinutesBeforeTheLast(t *testing.T) {
	s := mustOpen(t, Config{})
	rounds := [][]int64{{0, 600}, {0, 300, 600, 900}}
	for i, secs := range rounds {
		commit(t, s, func(b *tally.Batch) {
			for _, sec := range secs {
				addHit(b, page(sec, uint64(i+1), "/"), 200, 0, false)
			}
		})
	}
	for _, tt := range []struct {
		sec                int64
		requests, visitors int64
	}{{0, 2, 2}, {300, 1, 1}, {600, 2, 2}, {900, 1, 1}} {
		at := t0.Add(time.Duration(tt.sec) * time.Second)
		got, err := s.Minutes(at, at)
		if err != nil || len(got) != 1 || got[0].Requests != tt.requests || got[0].Visitors != tt.visitors || got[0].Approximate {
			t.Errorf("minute %v: %+v, %v; want %d requests of %d visitors, exact", at, got, err, tt.requests, tt.visitors)
		}
	}
}
