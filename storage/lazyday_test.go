package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	damagetest "github.com/logtally/logtally/internal/damage"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// TestLazyDayIsTheStoredDay commits the same random lines, late ones (some
// past the retention of days) and days past midnight among them, into a store that keeps its newest days
// as their hours and one that stores each day's record as commits come
// (eagerDays, as schema 6 did): in zones whose days start on the hour
// (UTC, Sao Paulo) and in zones whose days do not (Kolkata, and Lord Howe
// Island, half an hour off in summer), with hours kept for a year and for
// less than a day. Every day reads the same from both, at every step
// (Series of days, Totals); both prunes delete the same; and once pruned,
// each value of the lazy store is the eager store's, a lazy day's record
// made from its hours included.
func TestLazyDayIsTheStoredDay(t *testing.T) {
	zones := []struct {
		tz    string
		start time.Time // a few days before a change of offset, if any
	}{
		{"UTC", t0},
		{"America/Sao_Paulo", time.Date(2018, 11, 1, 12, 0, 0, 0, time.UTC)}, // 4 November began at 01:00
		{"Europe/London", time.Date(2027, 3, 25, 12, 0, 0, 0, time.UTC)},
		{"Asia/Kolkata", t0},
		{"Australia/Lord_Howe", time.Date(2027, 4, 1, 12, 0, 0, 0, time.UTC)}, // +11 to +10:30 on 4 April
	}
	for _, z := range zones {
		for _, hours := range []time.Duration{400 * 24 * time.Hour, 20 * time.Hour} {
			for seed := range uint64(2) {
				t.Run(fmt.Sprintf("%s/%s/%d", z.tz, hours, seed), func(t *testing.T) { testLazyDay(t, z.tz, z.start, hours, seed) })
			}
		}
	}
}

func testLazyDay(t *testing.T, tz string, start time.Time, hours time.Duration, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	now := start
	clock := func() time.Time { return now }
	cfg := Config{MinuteRetention: 2 * 24 * time.Hour, HourRetention: hours, DayRetention: 6 * 24 * time.Hour,
		ApplyRetention: true, TZ: tz}
	var stores [2]*Store // lazy, eager
	for i := range stores {
		c := cfg
		c.Path = fmt.Sprintf("%s/db%d", t.TempDir(), i)
		stores[i] = noSync(mustOpenAt(t, c, clock))
	}
	stores[1].eagerDays = true
	sites := []string{"a.example", "b.example", "c.example", logtally.DefaultSite}
	newest := start
	for step := range 80 {
		switch r := rng.IntN(100); {
		case r < 65:
			hits := randomHits(rng, sites, newest)
			if r < 5 { // a busy day: a sketch past its sparse form
				hits = append(hits, crowd(rng, sites[rng.IntN(len(sites))], newest, 3*denseFrom/2)...)
			}
			if r >= 55 { // past the retention of days, not of hours
				hits = append(hits, veryLate(rng, sites, newest)...)
			}
			newest = commitBoth(t, step, stores, hits, newest)
			if newest.After(now) {
				now = newest
			}
		case r < 80:
			d := time.Duration(rng.IntN(30)) * time.Hour
			if r >= 77 { // past the retention of days at once
				d = time.Duration(6*24+rng.IntN(48)) * time.Hour
			}
			newest, now = newest.Add(d), now.Add(d)
		case r < 95:
			pruneSame(t, step, stores)
		default:
			for i, s := range stores {
				stores[i] = noSync(reopen(t, s))
			}
			stores[1].eagerDays = true
		}
		readSame(t, step, stores, sites, newest)
	}
	pruneSame(t, -1, stores)
	readSame(t, -1, stores, sites, newest)
	lazy := valuesSame(t, stores)
	switch {
	case tz == "Asia/Kolkata" && lazy > 0:
		t.Errorf("%d days of a zone half an hour off UTC kept as their hours", lazy)
	case tz == "UTC" && hours > 24*time.Hour && lazy == 0:
		t.Error("no day was kept as its hours")
	}
}

// crowd returns n hits of n visitors in one site, spread over the hour
// before newest.
func crowd(rng *rand.Rand, site string, newest time.Time, n int) []siteHit {
	hits := make([]siteHit, n)
	for i := range hits {
		at := newest.Add(-time.Duration(rng.IntN(3600)) * time.Second)
		hits[i] = siteHit{site, logtally.Hit{Time: at.Unix(), PageView: true, Visitor: rng.Uint64(),
			Path: []byte("/"), Status: 200, Bytes: 1}}
	}
	return hits
}

// veryLate returns a few hits of a site five to ten days before newest:
// into days the retention of days expires or is about to, whose hours a
// longer retention of hours still keeps.
func veryLate(rng *rand.Rand, sites []string, newest time.Time) []siteHit {
	hits := make([]siteHit, 1+rng.IntN(3))
	for i := range hits {
		at := newest.Add(-5*24*time.Hour - time.Duration(rng.IntN(5*24*60))*time.Minute)
		hits[i] = siteHit{sites[rng.IntN(len(sites))], logtally.Hit{Time: at.Unix(), PageView: true,
			Visitor: rng.Uint64N(40) + 1, Path: []byte("/late"), Status: 200, Bytes: 10}}
	}
	return hits
}

// pruneSame prunes both stores, and fails unless they say they deleted
// the same.
func pruneSame(t *testing.T, step int, stores [2]*Store) {
	t.Helper()
	var said [2]string
	for i, s := range stores {
		pruned, err := s.Prune(context.Background())
		if err != nil {
			t.Fatalf("step %d: prune: %v", step, err)
		}
		said[i] = fmt.Sprint(pruned)
	}
	if said[0] != said[1] {
		t.Fatalf("step %d: the lazy store pruned %s\nthe eager one %s", step, said[0], said[1])
	}
}

// readSame fails unless every site reads the same days from both stores:
// the week before newest, a day a point, and its totals.
func readSame(t *testing.T, step int, stores [2]*Store, sites []string, newest time.Time) {
	t.Helper()
	from := newest.Add(-8 * 24 * time.Hour)
	for _, name := range sites {
		var got [2]string
		for i, s := range stores {
			si, ok := s.Site(name)
			if !ok {
				continue
			}
			series, err := si.Series(from, newest, 24*time.Hour)
			if err != nil {
				t.Fatalf("step %d: site %s: series: %v", step, name, err)
			}
			total, err := si.Totals(from, newest)
			if err != nil {
				t.Fatalf("step %d: site %s: totals: %v", step, name, err)
			}
			got[i] = fmt.Sprintf("%+v\ntotal %+v", series, total)
		}
		if got[0] != got[1] {
			t.Fatalf("step %d: site %s reads\n%s\nfrom the lazy store, and from the eager one\n%s", step, name, got[0], got[1])
		}
	}
}

// valuesSame fails unless the lazy store holds every value the eager one
// does, but for days it keeps as their hours, whose records it would
// store byte for byte the same, and the first of them in its counters. It
// returns how many days the lazy store keeps as their hours.
func valuesSame(t *testing.T, stores [2]*Store) int {
	t.Helper()
	lazy, eager := dumpStore(t, stores[0]), dumpStore(t, stores[1])
	var diffs []string
	lazyDays := 0
	for _, k := range slices.Sorted(maps.Keys(eager)) {
		v, ok := lazy[k]
		if !ok && strings.Contains(k, `/"days"/`) {
			v, ok = lazyRecord(t, stores[0], k), true
			lazyDays++
		}
		if !ok || v != eager[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %q, eager %q", k, v, eager[k]))
		}
	}
	for k := range lazy {
		if _, ok := eager[k]; !ok && !strings.HasSuffix(k, fmt.Sprintf("/%x", keyLazyFrom)) {
			diffs = append(diffs, fmt.Sprintf("%s: %q, not in the eager store", k, lazy[k]))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%d values differ:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 10)], "\n"))
	}
	return lazyDays
}

// lazyRecord returns the record that the lazy store makes from its hours
// for the day of key, a dumpStore key of a site's days, failing if the
// day is before the day of the site's newest line: a prune stores those.
func lazyRecord(t *testing.T, s *Store, key string) string {
	t.Helper()
	var site string
	var day []byte
	if _, err := fmt.Sscanf(strings.ReplaceAll(key, "/", " "), `"sites" %q "days" %x`, &site, &day); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	si, _ := s.Site(site)
	var v []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if newest, _ := si.newest(tx); string(day) < string(dayKey(time.Unix(newest, 0), s.loc)) {
			t.Errorf("%s: a day before the newest kept as its hours after a prune", key)
		}
		var err error
		v, _, err = si.lazyValue(tx, day, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// TestLazyDayBounds: a day is kept as its hours only where its bounds in
// the zone are whole UTC hours, found as the first instants of the day
// and of the next even where the zone skips a midnight.
func TestLazyDayBounds(t *testing.T) {
	for _, tt := range []struct {
		tz         string
		day        string
		start, end string // UTC
		lazy       bool
	}{
		{"UTC", "2026-11-21", "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z", true},
		{"Asia/Kolkata", "2026-11-21", "2026-11-20T18:30:00Z", "2026-11-21T18:30:00Z", false},
		// Clocks went from 00:00 to 01:00: the day began at 01:00 -02.
		{"America/Sao_Paulo", "2018-11-04", "2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z", true},
		{"America/Sao_Paulo", "2018-11-03", "2018-11-03T03:00:00Z", "2018-11-04T03:00:00Z", true},
		{"Europe/London", "2027-03-28", "2027-03-28T00:00:00Z", "2027-03-28T23:00:00Z", true},
		// +11 until 02:00, then +10:30: a day that starts on the hour and
		// ends off it, then days off it altogether.
		{"Australia/Lord_Howe", "2027-04-03", "2027-04-02T13:00:00Z", "2027-04-03T13:00:00Z", true},
		{"Australia/Lord_Howe", "2027-04-04", "2027-04-03T13:00:00Z", "2027-04-04T13:30:00Z", false},
		{"Australia/Lord_Howe", "2027-04-05", "2027-04-04T13:30:00Z", "2027-04-05T13:30:00Z", false},
	} {
		t.Run(tt.tz+"/"+tt.day, func(t *testing.T) {
			s := mustOpen(t, Config{TZ: tt.tz})
			d, err := time.Parse(time.DateOnly, tt.day)
			if err != nil {
				t.Fatal(err)
			}
			key := dayKey(d, time.UTC)
			start, end := dayBounds(key, s.loc)
			if got := start.UTC().Format(time.RFC3339) + " " + end.UTC().Format(time.RFC3339); got != tt.start+" "+tt.end {
				t.Errorf("bounds %s, want %s %s", got, tt.start, tt.end)
			}
			if got := s.def.lazyDay(key, floors{}); got != tt.lazy {
				t.Errorf("lazy = %v, want %v", got, tt.lazy)
			}
		})
	}
}

// TestLazyDayOffTheHour: Lord Howe Island's days are whole UTC hours
// until 4 April 2027, when its clocks go from +11 to +10:30, and half an
// hour off them after. A day off the hour is never lazy, whatever day
// before it is: its record is not made from its hours, whose first holds
// the last half hour of the day before, and a day without lines of its
// own reads as none, though its first hour holds the day before's last
// lines. Before, a commit into 5 April made its record from its hours,
// the late evening of 4 April counted twice, and 6 April, with no line,
// read the late evening of 5 April once a line of 7 April's first half
// hour, in 6 April's last hour, made it look lazy.
func TestLazyDayOffTheHour(t *testing.T) {
	loc, err := time.LoadLocation("Australia/Lord_Howe")
	if err != nil {
		t.Fatal(err)
	}
	at := func(day, hour, minute int) time.Time { return time.Date(2027, 4, day, hour, minute, 0, 0, loc) }
	for _, tt := range []struct {
		name  string
		lines []time.Time // a commit each, after one on 3 April, lazy
	}{
		{"stored from its hours", []time.Time{at(4, 23, 45), at(5, 0, 45)}},
		{"read from its hours", []time.Time{at(5, 23, 45), at(7, 0, 10)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := at(9, 0, 0)
			cfg := Config{MinuteRetention: 2 * 24 * time.Hour, HourRetention: 400 * 24 * time.Hour,
				DayRetention: 60 * 24 * time.Hour, TZ: "Australia/Lord_Howe"}
			var stores [2]*Store // lazy, eager
			for i := range stores {
				c := cfg
				c.Path = filepath.Join(t.TempDir(), "db")
				stores[i] = mustOpenAt(t, c, func() time.Time { return now })
			}
			stores[1].eagerDays = true
			for i, line := range append([]time.Time{at(3, 12, 0)}, tt.lines...) {
				hit := logtally.Hit{Time: line.Unix(), PageView: true, Visitor: uint64(i + 1), Path: []byte("/"), Status: 200, Bytes: 1}
				for _, s := range stores {
					if err := s.Commit(hitBatches([]siteHit{{logtally.DefaultSite, hit}})...); err != nil {
						t.Fatal(err)
					}
				}
				readSame(t, i, stores, []string{logtally.DefaultSite}, now)
			}
			pruneSame(t, -1, stores)
			valuesSame(t, stores)
		})
	}
}

// TestUpgradeFromSchema6: testdata/v6-days.db.gz, which 69482cd (schema 6,
// a record for every day as commits came) wrote from daysSteps(0, 3), is
// upgraded by writing the version, and holds then what a store that
// stores its days as commits come holds from the same history, value for
// value. Two more days of commits and prunes later, late lines into its
// stored days among them, it reads and holds what that store does but
// for its newest days, kept as their hours.
func TestUpgradeFromSchema6(t *testing.T) {
	clock := t0.Add(3 * 24 * time.Hour)
	now := func() time.Time { return clock }
	old := readGzip(t, filepath.Join("testdata", "v6-days.db.gz"))
	if v, _ := fileLayout(t, old); v != 6 {
		t.Fatalf("testdata/v6-days.db.gz is of schema %d", v)
	}
	upgraded := mustOpenAt(t, Config{TZ: "UTC", Path: old}, now)
	if v, _ := layout(t, upgraded.db); v != SchemaVersion {
		t.Fatalf("schema %d after the upgrade, want %d", v, SchemaVersion)
	}
	eagerClock := t0
	eager := mustOpenAt(t, Config{TZ: "UTC"}, func() time.Time { return eagerClock })
	eager.eagerDays = true
	runSteps(t, eager, &eagerClock, daysSteps(0, 3))
	eager = reopen(t, eager) // as the file was, once written
	eager.eagerDays = true
	stores := [2]*Store{upgraded, eager}
	sites := []string{logtally.DefaultSite, "b.example"}
	if lazy := valuesSame(t, stores); lazy != 0 {
		t.Errorf("%d days kept as their hours before any commit", lazy)
	}
	for _, st := range daysSteps(3, 5) {
		eagerClock = t0.Add(st.clock)
		one := []setsStep{st}
		runSteps(t, upgraded, &clock, one)
		runSteps(t, eager, &eagerClock, one)
		readSame(t, 0, stores, sites, clock)
	}
	pruneSame(t, -1, stores)
	if lazy := valuesSame(t, stores); lazy != len(sites) {
		t.Errorf("%d days kept as their hours, want the newest of each site", lazy)
	}
}

// daysSteps returns the steps (run by runSteps) of a history of the
// default site and b.example over days from t0's, from, to before:
// commits of a few hours of lines each, a prune a day, and a late line
// into the day before. daysSteps(0, 3) wrote testdata/v6-days.db.gz.
func daysSteps(from, to int) []setsStep {
	rng := rand.New(rand.NewPCG(uint64(from), 62))
	var steps []setsStep
	for d := from; d < to; d++ {
		for part := range 4 {
			hits := make(map[string][]logtally.Hit)
			for _, site := range []string{logtally.DefaultSite, "b.example"} {
				for range 20 + rng.IntN(40) {
					sec := int64(d*86400 + part*6*3600 + rng.IntN(6*3600) - 12*3600)
					hits[site] = append(hits[site], page(sec, rng.Uint64N(300)+1, fmt.Sprintf("/p%d", rng.IntN(9))))
				}
				if d > from && part == 1 {
					hits[site] = append(hits[site], page(int64((d-1)*86400-3600), rng.Uint64N(300)+1, "/late"))
				}
			}
			steps = append(steps, setsStep{time.Duration(d*86400+(part+1)*6*3600-12*3600) * time.Second, hits})
		}
		steps = append(steps, setsStep{clock: time.Duration(d*86400+12*3600) * time.Second})
	}
	return steps
}

// TestLazyDayHeld: a start that asks for a shorter retention of days than
// the stored one says what it would delete, lazy days before the newest,
// which no prune has stored yet, among them, as a store that stores every
// day says. Before, it counted the stored days alone.
func TestLazyDayHeld(t *testing.T) {
	now := t0.Add(5 * 24 * time.Hour)
	clock := func() time.Time { return now }
	cfg := Config{HourRetention: 400 * 24 * time.Hour, DayRetention: 30 * 24 * time.Hour}
	var held [2]string
	for i, eager := range []bool{false, true} {
		c := cfg
		c.Path = filepath.Join(t.TempDir(), "db")
		s := mustOpenAt(t, c, clock)
		s.eagerDays = eager
		for d := range 5 {
			hit := page(int64(d*86400), uint64(d+1), "/")
			if err := s.Commit(hitBatches([]siteHit{{logtally.DefaultSite, hit}})...); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		c.DayRetention = 2 * 24 * time.Hour
		held[i] = fmt.Sprintf("%+v", mustOpenAt(t, c, clock).Held())
	}
	if held[0] != held[1] {
		t.Errorf("the lazy store holds back %s\nthe eager one %s", held[0], held[1])
	}
}

// TestLazyDayNamesItsDamagedHour: a lazy day with a damaged hour is read
// without it, its point marked, and a series of days names the hour as a
// series of hours does, the one problem Damage counts once. Before, it
// named the day's first hour, the damaged one only in its message: a
// second problem, of an hour that was whole.
func TestLazyDayNamesItsDamagedHour(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clock := func() time.Time { return t0.Add(2 * 24 * time.Hour) }
	s := mustOpenAt(t, Config{Path: path}, clock)
	// Every hour of t0's day, enough that the hours are not inlined in
	// their bucket's page, then a line of the next day.
	commit(t, s, func(b *tally.Batch) {
		for sec := int64(-12 * 3600); sec < 12*3600; sec += 60 {
			addHit(b, page(sec, uint64(sec), "/"), 200, 1, false)
		}
	})
	commit(t, s, func(b *tally.Batch) { addHit(b, page(13*3600, 1, "/"), 200, 1, false) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	hours, err := damagetest.Values(path, "sites", logtally.DefaultSite, "hours")
	if err != nil || len(hours) != 25 {
		t.Fatalf("the hours: %d, %v", len(hours), err)
	}
	if _, err := damagetest.Overwrite(path, hours[5], rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	s = mustOpenAt(t, Config{Path: path}, clock)
	var named [2][]string
	var requests [2]int64 // of t0's day, the damaged hour left out
	day := t0.Truncate(24 * time.Hour)
	for i, step := range []time.Duration{time.Hour, 24 * time.Hour} {
		series, err := s.Series(day, day.Add(23*time.Hour), step)
		if err != nil {
			t.Fatal(err)
		}
		named[i] = series.Damaged
		for _, p := range series.Points {
			requests[i] += p.Requests
		}
		if i == 1 && !series.Points[0].Damaged {
			t.Error("the day is not marked damaged")
		}
	}
	if len(named[1]) != 1 || !slices.Equal(named[0], named[1]) {
		t.Errorf("a series of days names %q, one of hours %q", named[1], named[0])
	}
	if requests[1] != requests[0] || requests[0] != 24*60-60 {
		t.Errorf("the day counts %d requests, its hours %d; want the day's 1,440 but the damaged hour's 60", requests[1], requests[0])
	}
	var damage *DamageError
	if err := s.Damage(); !errors.As(err, &damage) || len(damage.Problems)+damage.More != 1 {
		t.Errorf("Damage = %v, want the one hour", err)
	}
}
