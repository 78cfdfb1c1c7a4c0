package storage

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/golden"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// setsConfig is the configuration of the stores of setsSteps: a few top
// pages a minute, so that minutes fold pages into Other.
var setsConfig = Config{TopPages: 5, TZ: "UTC"}

// setsStep is one step of the history of testdata/v5-sets.db.gz: a commit
// of one batch a site at a clock, or a prune (no hits) at a clock.
type setsStep struct {
	clock time.Duration // after t0
	hits  map[string][]logtally.Hit
}

// setsHits returns the hits of a step, made from rng: for each minute (of
// t0) in minutes, n(minute) new visitors with a page view each, and the
// first repeats of the minute's visitors of an earlier step again.
type setsMinute struct {
	minute  int64
	fresh   int   // new visitors, a page view each
	repeats int   // visitors of earlier steps' page views of the minute, again
	assets  int64 // requests that are not page views
}

// setsSteps are the steps of testdata/v5-sets.db.gz: minutes of the
// default site and of b.example, of 0 to 2,500 visitors, written in one
// commit or several, some repeats counting a minute past denseFrom with
// fewer distinct visitors; a prune that compacts the visitor sets of the
// first hour; late lines into compacted minutes (approximate from then
// on), into one with no visitors (exact again), and into a new minute
// behind the span (which keeps its set).
func setsSteps() []setsStep {
	rng := rand.New(rand.NewPCG(5, 6))
	seen := make(map[string]map[int64][]uint64)
	build := func(site string, ms []setsMinute) []logtally.Hit {
		if seen[site] == nil {
			seen[site] = make(map[int64][]uint64)
		}
		var hits []logtally.Hit
		for _, m := range ms {
			sec := 60 * m.minute
			for i := range m.assets {
				hits = append(hits, asset(sec+i%60))
			}
			old := seen[site][m.minute]
			for i := range m.repeats {
				hits = append(hits, page(sec+int64(i%60), old[i], fmt.Sprintf("/p%d", i%7)))
			}
			for i := range m.fresh {
				v := rng.Uint64()
				seen[site][m.minute] = append(seen[site][m.minute], v)
				path := fmt.Sprintf("/p%d", rng.IntN(12))
				hits = append(hits, page(sec+int64(i%60), v, path))
				if i%3 == 0 {
					hits = append(hits, page(sec+int64(i%60), v, path)) // a second view
				}
			}
		}
		return hits
	}
	var first, firstB []setsMinute
	for i := range int64(60) {
		switch {
		case i == 0:
			first = append(first, setsMinute{minute: i, assets: 3})
		case i == 5:
			first = append(first, setsMinute{minute: i, fresh: 2500})
		case i == 6:
			first = append(first, setsMinute{minute: i, fresh: 1500})
		default:
			first = append(first, setsMinute{minute: i, fresh: int(i%9) + 1, assets: i % 2})
		}
		if i%3 == 0 {
			firstB = append(firstB, setsMinute{minute: i, fresh: 2})
		}
	}
	var recent, recentB []setsMinute
	for i := int64(180); i <= 200; i++ {
		n := 4
		if i == 196 {
			n = 1500
		}
		recent = append(recent, setsMinute{minute: i, fresh: n})
		if i <= 190 {
			recentB = append(recentB, setsMinute{minute: i, fresh: 2})
		}
	}
	b := "b.example"
	return []setsStep{
		{70 * time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, first), b: build(b, firstB)}},
		{70 * time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, []setsMinute{
			{minute: 6, repeats: 600}, // 1,500 + 600 past denseFrom, 1,500 distinct
			{minute: 1, fresh: 3, repeats: 1}, {minute: 2, fresh: 3, repeats: 2}, {minute: 3, fresh: 3, repeats: 2},
			{minute: 4, fresh: 3, repeats: 2}, {minute: 0, assets: 2},
		})}},
		{3*time.Hour + 25*time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, recent), b: build(b, recentB)}},
		{3*time.Hour + 40*time.Minute, nil}, // compacts the first hour's sets
		{3*time.Hour + 45*time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: build(logtally.DefaultSite, []setsMinute{
			{minute: 2, fresh: 2, repeats: 1}, {minute: 0, fresh: 1}, {minute: 70, fresh: 3},
			{minute: 6, fresh: 5}, {minute: 190, fresh: 2, repeats: 1},
			{minute: 196, repeats: 600}, // a kept set of 1,500 visitors, whose sketch is dense
		}), b: build(b, []setsMinute{{minute: 3, fresh: 1}})}},
	}
}

// setsMore are the steps after setsSteps that the upgrade test takes in
// both stores: a prune that compacts the sets the file kept behind the
// span, then lines into compacted minutes, into a kept set and into new
// minutes.
func setsMore() []setsStep {
	rng := rand.New(rand.NewPCG(7, 8))
	pages := func(minute int64, n int) []logtally.Hit {
		var hits []logtally.Hit
		for i := range n {
			hits = append(hits, page(60*minute+int64(i), rng.Uint64(), "/p1"))
		}
		return hits
	}
	def := append(pages(0, 2), pages(185, 3)...)
	def = append(def, pages(5, 10)...)
	def = append(def, pages(70, 1)...)
	def = append(def, pages(196, 2)...)
	def = append(def, pages(9, 2)...)
	for m := int64(201); m <= 205; m++ {
		def = append(def, pages(m, 3)...)
	}
	return []setsStep{
		{4 * time.Hour, nil},
		{4*time.Hour + 5*time.Minute, map[string][]logtally.Hit{logtally.DefaultSite: def, "b.example": pages(183, 1)}},
	}
}

// runSteps takes steps in s, whose clock is *clock.
func runSteps(t *testing.T, s *Store, clock *time.Time, steps []setsStep) {
	t.Helper()
	for _, st := range steps {
		*clock = t0.Add(st.clock)
		if st.hits == nil {
			if _, err := s.Prune(context.Background()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var bs []*tally.Batch
		for _, site := range []string{logtally.DefaultSite, "b.example"} {
			if hits, ok := st.hits[site]; ok {
				b := tally.NewSiteBatch(site)
				for _, h := range hits {
					addHit(b, h, 200, 100, false)
				}
				bs = append(bs, b)
			}
		}
		if err := s.Commit(bs...); err != nil {
			t.Fatal(err)
		}
	}
}

// setsAnswers returns, a line each, what the sites of a store of
// setsSteps answer: every minute, hour and day, series of 5 and 10
// minutes (whose visitors merge the minutes'), the top pages and path
// counts, and the exact visitor set of every minute that keeps one.
func setsAnswers(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	from, to := t0, t0.Add(4*time.Hour)
	for _, name := range []string{logtally.DefaultSite, "b.example"} {
		si, ok := s.Site(name)
		if !ok {
			t.Fatalf("no site %s", name)
		}
		fmt.Fprintf(&b, "site %s\n", name)
		minutes, err := si.Minutes(from, to)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range minutes {
			fmt.Fprintf(&b, "minute %s %+v\n", m.Time.Format("15:04"), m.Counts)
		}
		for _, step := range []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, time.Hour, 24 * time.Hour} {
			series, err := si.Series(from, to, step)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "series %s approximate %t kept from %s\n", step, series.Approximate, series.KeptFrom.Format(time.RFC3339))
			for _, p := range series.Points {
				if p.Requests > 0 {
					fmt.Fprintf(&b, "  %s %+v\n", p.Time.Format("15:04"), p)
				}
			}
		}
		pages, err := si.Pages(from, to, 10)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "pages %+v\n", pages)
		counts, err := si.PathCounts([]string{"/p0", "/p1", "/p11", "/app.css"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "path counts %+v\n", counts)
		totals, err := si.Totals(from, to)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "totals %+v\n", totals)
		for m := from; !m.After(to); m = m.Add(time.Minute) {
			set, ok, err := si.MinuteVisitors(m)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				h := fnv.New64a()
				fmt.Fprint(h, set)
				fmt.Fprintf(&b, "visitors %s %d %x\n", m.Format("15:04"), len(set), h.Sum64())
			}
		}
	}
	return b.String()
}

// readGzip writes the gzipped file at src to a temporary file, and returns
// its path.
func readGzip(t *testing.T, src string) string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSetsStepsAnswerTheGolden: a store fed setsSteps answers what the
// program of schema 5 answered (testdata/v5-sets.golden).
func TestSetsStepsAnswerTheGolden(t *testing.T) {
	clock := t0
	s := mustOpenAt(t, setsConfig, func() time.Time { return clock })
	runSteps(t, s, &clock, setsSteps())
	checkSetsGolden(t, setsAnswers(t, s))
}

// checkSetsGolden compares answers with testdata/v5-sets.golden, what the
// store that wrote testdata/v5-sets.db.gz answered. It is not rewritten
// by -update: no program of this schema can write it again.
func checkSetsGolden(t *testing.T, answers string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", "v5-sets.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if d := golden.Diff(string(want), answers); d != "" {
		t.Errorf("answers differ from testdata/v5-sets.golden:\n%s", d)
	}
}

// v5Sets writes testdata/v5-sets.db.gz to a temporary file and returns its
// path: the file that 31624d4 (schema 5, visitor sets in a bucket of their
// own) wrote from setsSteps, with setsConfig, its answers in
// testdata/v5-sets.golden.
func v5Sets(t *testing.T) string {
	t.Helper()
	return readGzip(t, filepath.Join("testdata", "v5-sets.db.gz"))
}

// TestV5SetsReadAsTheyWere: the file of schema 5, opened read-only (as
// report and check do, upgrading nothing), answers what it answered.
func TestV5SetsReadAsTheyWere(t *testing.T) {
	cfg := setsConfig
	cfg.Path = v5Sets(t)
	s, err := OpenReadOnly(cfg, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkSetsGolden(t, setsAnswers(t, s))
}

// fileLayout returns the schema version of the file at path, and the
// names of the buckets of each of its sites.
func fileLayout(t *testing.T, path string) (version uint64, buckets map[string][]string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return layout(t, db)
}

// layout is fileLayout of an open file.
func layout(t *testing.T, db *bolt.DB) (version uint64, buckets map[string][]string) {
	t.Helper()
	buckets = make(map[string][]string)
	err := db.View(func(tx *bolt.Tx) error {
		version = uint64Key(tx.Bucket(bucketMeta).Get(keySchema))
		return tx.Bucket(bucketSites).ForEach(func(site, _ []byte) error {
			return tx.Bucket(bucketSites).Bucket(site).ForEach(func(k, _ []byte) error {
				buckets[string(site)] = append(buckets[string(site)], string(k))
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return version, buckets
}

// TestUpgradeFromSchema5: Open upgrades the file of schema 5 in place: its
// schema is 6, no site has a bucket of visitor sets, every query answers
// what it answered before, and lines committed after (into compacted
// minutes, kept sets and new minutes, after a prune that compacts the sets
// moved into records) count as they do in a store that was never
// upgraded, fed the same lines. A move cut short (the version written,
// sets left apart) goes on at the next Open.
func TestUpgradeFromSchema5(t *testing.T) {
	for _, cut := range []bool{false, true} {
		t.Run(fmt.Sprintf("cut short %t", cut), func(t *testing.T) {
			path := v5Sets(t)
			if v, buckets := fileLayout(t, path); v != 5 || !slices.Contains(buckets[logtally.DefaultSite], string(bucketVisitors)) {
				t.Fatalf("the old file: schema %d, buckets %v", v, buckets)
			}
			if cut {
				db, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, u64(6)) })
				db.Close()
			}
			clock := t0.Add(4 * time.Hour)
			cfg := setsConfig
			cfg.Path = path
			s := mustOpenAt(t, cfg, func() time.Time { return clock })
			v, buckets := layout(t, s.db)
			if v != SchemaVersion {
				t.Errorf("schema %d after the upgrade, want %d", v, SchemaVersion)
			}
			for site, names := range buckets {
				if slices.Contains(names, string(bucketVisitors)) {
					t.Errorf("site %s still has a bucket of visitor sets: %v", site, names)
				}
			}
			checkSetsGolden(t, setsAnswers(t, s))

			runSteps(t, s, &clock, setsMore())
			fclock := t0
			fresh := mustOpenAt(t, setsConfig, func() time.Time { return fclock })
			runSteps(t, fresh, &fclock, append(setsSteps(), setsMore()...))
			if d := golden.Diff(setsAnswers(t, fresh), setsAnswers(t, s)); d != "" {
				t.Errorf("the upgraded store answers otherwise than one never upgraded:\n%s", d)
			}
		})
	}
}

// minuteValues returns the stored minutes of a site of the store, by key.
func minuteValues(t *testing.T, s *Store, site string) map[int64][]byte {
	t.Helper()
	si, _ := s.Site(site)
	out := make(map[int64][]byte)
	err := s.db.View(func(tx *bolt.Tx) error {
		return si.bucket(tx, bucketMinutes).ForEach(func(k, v []byte) error {
			out[int64(uint64Key(k))-t0.Unix()/60] = bytes.Clone(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompactedSetIsTheSketch: a minute whose visitor set compaction turned
// into its sketch is stored byte for byte as the program of schema 5
// stored it, which kept the sketch from the first commit on (the minutes
// of the first hour of testdata/v5-sets.db.gz that one commit wrote, dense
// or sparse, its set dropped by a prune); and lines added after to such a
// minute make it approximate as they made the old program's, to the byte.
func TestCompactedSetIsTheSketch(t *testing.T) {
	cfg := setsConfig
	cfg.Path = v5Sets(t)
	clock := t0.Add(4 * time.Hour)
	old := mustOpenAt(t, cfg, func() time.Time { return clock })
	fclock := t0
	fresh := mustOpenAt(t, setsConfig, func() time.Time { return fclock })
	runSteps(t, fresh, &fclock, setsSteps())
	oneCommit := map[string][]int64{logtally.DefaultSite: {5}, "b.example": nil}
	for m := int64(7); m < 60; m++ {
		oneCommit[logtally.DefaultSite] = append(oneCommit[logtally.DefaultSite], m)
	}
	for m := int64(0); m < 60; m += 3 {
		if m != 3 { // written late
			oneCommit["b.example"] = append(oneCommit["b.example"], m)
		}
	}
	for site, minutes := range oneCommit {
		got, want := minuteValues(t, fresh, site), minuteValues(t, old, site)
		for _, m := range minutes {
			var r record
			if !holdsSet(want[m]) && r.decode(want[m], true) == nil && r.hll == nil {
				t.Fatalf("%s minute %d of the old file has no sketch", site, m)
			}
			if !bytes.Equal(got[m], want[m]) {
				t.Errorf("%s minute %d:\n got %x\nwant %x", site, m, got[m], want[m])
			}
		}
	}
	runSteps(t, old, &clock, setsMore())
	runSteps(t, fresh, &fclock, setsMore())
	got, want := minuteValues(t, fresh, logtally.DefaultSite), minuteValues(t, old, logtally.DefaultSite)
	for _, m := range []int64{5, 9} { // dense, sparse
		var r record
		if err := r.decode(got[m], false); err != nil || !r.Approximate {
			t.Errorf("minute %d after late lines: %+v, %v; want approximate", m, r.Counts, err)
		}
		if !bytes.Equal(got[m], want[m]) {
			t.Errorf("minute %d after late lines:\n got %x\nwant %x", m, got[m], want[m])
		}
	}
}

// TestCheckFindsDamagedSets: a minute that holds its visitor set is found
// damaged by Check and by Verify, and left out by the queries that read
// it, whether a byte of its set changed on disk (its checksum tells) or it
// was written whole but wrong: a set out of order, one that is not as
// large as the minute's visitors, one in an approximate minute, or one in
// an hour.
func TestCheckFindsDamagedSets(t *testing.T) {
	// rewrite returns a damage that puts the record of the first minute,
	// changed by change, in bucket, with its checksum right.
	rewrite := func(bucket []byte, change func(r *record)) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.Update(func(tx *bolt.Tx) error {
				site := tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite))
				var r record
				if err := r.decode(site.Bucket(bucketMinutes).Get(minuteKey(t0)), true); err != nil {
					return err
				}
				change(&r)
				v, err := r.encode()
				if err != nil {
					return err
				}
				return site.Bucket(bucket).Put(minuteKey(t0), v)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	const minute = "per-minute counts (bucket sites/default/minutes), minute 2026-11-21T12:00:00Z (key 0000000001c88f10)"
	tests := []damageCase{
		{"a byte of the set changed on disk", func(t *testing.T, path string) {
			var v []byte
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.View(func(tx *bolt.Tx) error {
				v = bytes.Clone(tx.Bucket(bucketSites).Bucket([]byte(logtally.DefaultSite)).Bucket(bucketMinutes).Get(minuteKey(t0)))
				return nil
			})
			db.Close()
			raw, err := os.ReadFile(path)
			if at := bytes.Index(raw, v); err != nil || at < 0 || bytes.LastIndex(raw, v) != at {
				t.Fatalf("the record is not once in the file: %v", err)
			} else {
				damage(t, path, int64(at+len(v)-recordSumSize-3), []byte{raw[at+len(v)-recordSumSize-3] ^ 0x5a})
			}
		}, minute + ": record checksum"},
		{"a set out of order", rewrite(bucketMinutes, func(r *record) {
			r.set = append(bytes.Clone(r.set[8:]), r.set[:8]...)
		}), minute + ": visitor set out of order"},
		{"a set smaller than the visitors", rewrite(bucketMinutes, func(r *record) { r.Visitors++ }),
			minute + ": visitor set of 3 with 4 visitors"},
		{"a set in an approximate minute", rewrite(bucketMinutes, func(r *record) { r.Approximate = true }),
			minute + ": visitor set of 3 with 3 visitors (approximate true)"},
		{"a set in an hour", rewrite(bucketHours, func(*record) {}),
			"hourly counts (bucket sites/default/hours), hour"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			s := mustOpen(t, Config{Path: path})
			commit(t, s, func(b *tally.Batch) {
				for v := range uint64(3) {
					addHit(b, page(int64(v), v+1, "/"), 200, 0, false)
				}
				addHit(b, page(60, 9, "/"), 200, 0, false)
			})
			s.Close()
			tt.damage(t, path)
			if err := Check(path); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check = %v\nwant ErrDamaged naming %q", err, tt.want)
			}
			s = mustOpen(t, Config{Path: path})
			s.Verify(context.Background(), slog.New(slog.DiscardHandler))
			if err := s.Damage(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Damage after Verify = %v\nwant %q", err, tt.want)
			}
			if strings.Contains(tt.want, "hour") {
				return
			}
			if set, ok, err := s.MinuteVisitors(t0); ok || err != nil {
				t.Errorf("MinuteVisitors of the damaged minute = %v, %t, %v; want none", set, ok, err)
			}
			series, err := s.Series(t0, t0.Add(time.Minute), 5*time.Minute)
			if err != nil || !series.Points[0].Damaged || series.Points[0].Visitors != 1 {
				t.Errorf("series over the damaged minute = %+v, %v; want its point damaged, the next minute's visitor", series, err)
			}
		})
	}
}

// TestCompactionFindsLateSets: compaction looks for sets from the oldest
// minute a commit gave one since it last looked (Site.setsFrom), not
// through every minute; a new minute written behind the span after a
// compaction, and a compacted minute of no visitors that a late line gives
// a set, are compacted by the next one.
func TestCompactionFindsLateSets(t *testing.T) {
	s := mustOpen(t, Config{ExactVisitorsSpan: time.Hour})
	prune := func() {
		t.Helper()
		s.writeMu.Lock()
		s.def.written = writes{} // as if the writes were long ago
		s.writeMu.Unlock()
		if _, err := s.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(0, 1, "/"), 200, 0, false)
		addHit(b, asset(120), 200, 0, false)
		addHit(b, page(3*3600, 3, "/"), 200, 0, false)
	})
	prune()
	for _, m := range []time.Time{t0, t0.Add(2 * time.Minute)} {
		if _, ok, _ := s.MinuteVisitors(m); ok {
			t.Fatalf("minute %s keeps its set after compaction", m)
		}
	}
	commit(t, s, func(b *tally.Batch) {
		addHit(b, page(60, 4, "/"), 200, 0, false)  // a new minute
		addHit(b, page(120, 5, "/"), 200, 0, false) // no visitors until now
	})
	for _, m := range []time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute)} {
		if set, ok, _ := s.MinuteVisitors(m); !ok || len(set) != 1 {
			t.Fatalf("minute %s written late: set %v, %t; want its visitor", m, set, ok)
		}
	}
	prune()
	minutes, _ := s.Minutes(t0, t0.Add(2*time.Minute))
	for _, m := range minutes {
		if _, ok, _ := s.MinuteVisitors(m.Time); ok {
			t.Errorf("minute %s keeps its set after the next compaction", m.Time)
		}
		if m.Visitors != 1 || m.Approximate {
			t.Errorf("minute %s: %+v, want its visitor, exact", m.Time, m.Counts)
		}
	}
}

// TestCompactionLooksInBatches: compaction turns every set behind the span
// though the minutes it looks through are more than one transaction looks
// at (scanBatch), and leaves the span's.
func TestCompactionLooksInBatches(t *testing.T) {
	const minutes = scanBatch + scanBatch/4
	s := mustOpen(t, Config{})
	commit(t, s, func(b *tally.Batch) {
		for m := range int64(minutes) {
			addHit(b, page(60*m, uint64(m+1), "/"), 200, 0, false)
		}
	})
	s.writeMu.Lock()
	s.def.written = writes{}
	s.writeMu.Unlock()
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	span := int(DefaultConfig().ExactVisitorsSpan/time.Minute) + 1 // the newest and the span before it
	sets := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		return s.def.bucket(tx, bucketMinutes).ForEach(func(k, v []byte) error {
			if holdsSet(v) {
				sets++
			}
			return nil
		})
	})
	if err != nil || sets != span {
		t.Errorf("%d of %d minutes keep their sets after compaction, want the %d of the span and the newest (%v)", sets, minutes, span, err)
	}
}

// TestSetRecordEncodingGolden pins the layout of a minute that holds its
// visitor set (flagSet, flagDense): a change to it must come with a new
// schema version.
func TestSetRecordEncodingGolden(t *testing.T) {
	r := record{Counts: logtally.Counts{Requests: 300, PageViews: 7, Visitors: 3, Status: [5]int64{0, 250, 20, 25, 5},
		Bytes: 123456, Rejected: 2, Top: []logtally.PageCount{{Path: "/a", PageViews: 4}, {Path: "/b/c", PageViews: 2}}, Other: 1},
		set: encodeHashes([]uint64{1, 5, 1 << 63}), denseSet: true}
	enc, err := r.encode()
	if err != nil {
		t.Fatal(err)
	}
	if set := (&record{Counts: r.Counts, denseSet: true}).encodeSet([]uint64{1, 5, 1 << 63}); !bytes.Equal(set, enc) {
		t.Errorf("encodeSet = %x, want encode's %x", set, enc)
	}
	golden.Check(t, filepath.Join("testdata", "record-set.golden"), []byte(hex.Dump(enc)), *update)
	var back record
	if err := back.decode(enc, true); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back.Counts) != fmt.Sprint(r.Counts) || !bytes.Equal(back.set, r.set) || !back.denseSet || back.hll != nil {
		t.Errorf("round trip = %+v, set %x dense %t; want %+v, set %x dense", back.Counts, back.set, back.denseSet, r.Counts, r.set)
	}
}
