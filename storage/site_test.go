package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// siteHits are the hits of one site in the tests of several sites: each
// site has paths and visitors of its own, and some in common with others.
type siteHits struct {
	site string
	hits []logtally.Hit
}

var twoSites = []siteHits{
	{"a.example", []logtally.Hit{page(0, 1, "/a"), page(10, 2, "/a"), page(70, 1, "/shared"), asset(80)}},
	{"b.example", []logtally.Hit{page(5, 1, "/b"), page(3600, 3, "/shared"), page(3601, 3, "/b"), page(86400, 4, "/b")}},
}

// siteBatch returns a batch of the site's hits, its lines read up to
// offset in the site's own file.
func siteBatch(sh siteHits, offset int64) *tally.Batch {
	b := tally.NewSiteBatch(sh.site)
	for _, h := range sh.hits {
		addHit(b, h, 200, 100, false)
	}
	b.SetPosition(sh.site+".log", offset)
	return b
}

// reader is what Store and Site both answer.
type reader interface {
	Series(from, to time.Time, step time.Duration) (logtally.Series, error)
	Pages(from, to time.Time, limit int) (logtally.PageRange, error)
	PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error)
	Totals(from, to time.Time) (logtally.Counts, error)
	Minutes(from, to time.Time) ([]logtally.Bucket, error)
	Newest() (time.Time, bool, error)
}

// readAll returns every answer a test of sites compares, as text.
func readAll(t *testing.T, r reader) string {
	t.Helper()
	var out []any
	for _, step := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
		series, err := r.Series(t0, t0.Add(2*24*time.Hour), step)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, series)
	}
	pages, err := r.Pages(t0, t0.Add(2*24*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := r.PathCounts([]string{"/a", "/b", "/shared", logtally.OtherPath}, t0)
	if err != nil {
		t.Fatal(err)
	}
	totals, err := r.Totals(t0, t0.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	minutes, err := r.Minutes(t0, t0.Add(2*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	newest, ok, err := r.Newest()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v", append(out, pages, counts, totals, minutes, newest, ok))
}

// alone returns the answers of a store that counted the site's hits alone,
// as its default site.
func alone(t *testing.T, sh siteHits) string {
	t.Helper()
	s := mustOpen(t, Config{})
	b := tally.NewBatch()
	for _, h := range sh.hits {
		addHit(b, h, 200, 100, false)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	return readAll(t, s)
}

// mustSite returns a stored site.
func mustSite(t *testing.T, s *Store, name string) *Site {
	t.Helper()
	si, ok := s.Site(name)
	if !ok {
		t.Fatalf("no site %s; sites %v", name, s.Sites())
	}
	return si
}

// checkSitePending fails unless a site's pending path counts are exactly
// the sum of its log values.
func checkSitePending(t *testing.T, s *Store, name string) {
	t.Helper()
	def := s.def
	s.def = mustSite(t, s, name)
	defer func() { s.def = def }()
	checkPending(t, s)
}

// TestCommitSeveralSites commits the batches of two sites in one Commit,
// in either order and with the default site's or not: each site answers
// exactly what a store that counted it alone answers, and the positions of
// both are stored.
func TestCommitSeveralSites(t *testing.T) {
	def := siteHits{logtally.DefaultSite, []logtally.Hit{page(20, 9, "/d")}}
	for _, tt := range []struct {
		name  string
		sites []siteHits
	}{
		{"two new sites", twoSites},
		{"the other order", []siteHits{twoSites[1], twoSites[0]}},
		{"with the default site", append([]siteHits{def}, twoSites...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t, Config{})
			var batches []*tally.Batch
			for i, sh := range tt.sites {
				batches = append(batches, siteBatch(sh, int64(100*(i+1))))
			}
			if err := s.Commit(batches...); err != nil {
				t.Fatal(err)
			}
			want := []string{logtally.DefaultSite}
			for i, sh := range tt.sites {
				if got, want := readAll(t, mustSite(t, s, sh.site)), alone(t, sh); got != want {
					t.Errorf("site %s answers\n%s\nwant, as counted alone,\n%s", sh.site, got, want)
				}
				if off, ok, err := s.Position(sh.site + ".log"); err != nil || !ok || off != int64(100*(i+1)) {
					t.Errorf("position of %s = %d, %t, %v; want %d", sh.site, off, ok, err, 100*(i+1))
				}
				if sh.site != logtally.DefaultSite {
					want = append(want, sh.site)
				}
				checkSitePending(t, s, sh.site)
			}
			slices.Sort(want)
			if got := s.Sites(); !slices.Equal(got, want) {
				t.Errorf("Sites() = %v, want %v", got, want)
			}
			// The store's own reads are the default site's.
			if got, want := readAll(t, s), readAll(t, mustSite(t, s, logtally.DefaultSite)); got != want {
				t.Errorf("Store reads\n%s\nwant the default site's\n%s", got, want)
			}
		})
	}
	// A few counts by hand, so that "as counted alone" is not wrong twice.
	s := mustOpen(t, Config{})
	if err := s.Commit(siteBatch(twoSites[0], 1), siteBatch(twoSites[1], 1)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		site                string
		requests, pageviews int64
		path                string
		pathViews           int64
	}{
		{"a.example", 4, 3, "/a", 2},
		{"b.example", 3, 3, "/b", 2}, // the fourth hit is the next day
		{logtally.DefaultSite, 0, 0, "/a", 0},
	} {
		si := mustSite(t, s, tt.site)
		totals, err := si.Totals(t0, t0)
		if err != nil || totals.Requests != tt.requests || totals.PageViews != tt.pageviews {
			t.Errorf("%s: Totals = %+v, %v; want %d requests, %d page views", tt.site, totals, err, tt.requests, tt.pageviews)
		}
		counts, err := si.PathCounts([]string{tt.path}, t0)
		if err != nil || counts[0].Day != tt.pathViews {
			t.Errorf("%s: PathCounts(%s) = %+v, %v; want %d", tt.site, tt.path, counts, err, tt.pathViews)
		}
	}
	if _, ok := s.Site("c.example"); ok {
		t.Error("Site(c.example) found a site never committed")
	}
}

// TestCommitRefusesBadBatches: a batch naming no valid site, and two
// batches of one site, are refused before anything is written.
func TestCommitRefusesBadBatches(t *testing.T) {
	s := mustOpen(t, Config{})
	for _, bs := range [][]*tally.Batch{
		{tally.NewSiteBatch("a/b")},
		{siteBatch(twoSites[0], 1), siteBatch(twoSites[0], 2)},
	} {
		if err := s.Commit(bs...); err == nil {
			t.Errorf("Commit of %d batches of %s succeeded", len(bs), bs[0].Site())
		}
	}
	if got := s.Sites(); !slices.Equal(got, []string{logtally.DefaultSite}) {
		t.Errorf("sites after refused commits: %v", got)
	}
}

// TestFailedCommitOfSeveralSites fails the transaction's commit, as a full
// disk would: no site's counts, no new site and no position is left, the
// path logs in memory are as before, and committing again counts once.
func TestFailedCommitOfSeveralSites(t *testing.T) {
	s := mustOpen(t, Config{Outbox: true})
	if err := s.Commit(siteBatch(twoSites[0], 10)); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, mustSite(t, s, "a.example"))
	more := siteHits{"a.example", []logtally.Hit{page(30, 5, "/a"), page(40, 5, "/new")}}
	disk := errors.New("disk full")
	s.commit = func(tx *bolt.Tx) error { tx.Rollback(); return disk }
	if err := s.Commit(siteBatch(more, 20), siteBatch(twoSites[1], 30)); !errors.Is(err, disk) {
		t.Fatalf("Commit = %v, want %v", err, disk)
	}
	if got := readAll(t, mustSite(t, s, "a.example")); got != before {
		t.Errorf("a failed commit changed a.example:\n%s\nwant\n%s", got, before)
	}
	checkSitePending(t, s, "a.example")
	if _, ok := s.Site("b.example"); ok {
		t.Error("a failed commit left site b.example")
	}
	if off, _, _ := s.Position("a.example.log"); off != 10 {
		t.Errorf("position of a.example.log %d after a failed commit, want 10", off)
	}
	if _, ok, _ := s.Position("b.example.log"); ok {
		t.Error("a failed commit left a position of b.example.log")
	}
	if st, _ := s.Outbox().Stats(); st.Entries != 1 || st.LastSeq != 1 {
		t.Errorf("outbox after a failed commit: %+v", st)
	}

	s.commit = (*bolt.Tx).Commit
	if err := s.Commit(siteBatch(more, 20), siteBatch(twoSites[1], 30)); err != nil {
		t.Fatal(err)
	}
	both := siteHits{"a.example", append(slices.Clone(twoSites[0].hits), more.hits...)}
	if got, want := readAll(t, mustSite(t, s, "a.example")), alone(t, both); got != want {
		t.Errorf("a.example after the retry:\n%s\nwant\n%s", got, want)
	}
	if got, want := readAll(t, mustSite(t, s, "b.example")), alone(t, twoSites[1]); got != want {
		t.Errorf("b.example after the retry:\n%s\nwant\n%s", got, want)
	}
}

// TestReopenLoadsSites reopens a store of several sites whose path logs
// were never compacted: the sites are listed, answer as before, and each
// site's log compacts into the same answers.
func TestReopenLoadsSites(t *testing.T) {
	s := mustOpen(t, Config{})
	if err := s.Commit(siteBatch(twoSites[0], 1), siteBatch(twoSites[1], 1)); err != nil {
		t.Fatal(err)
	}
	before := make(map[string]string)
	for _, sh := range twoSites {
		before[sh.site] = readAll(t, mustSite(t, s, sh.site))
	}
	s = reopen(t, s)
	if got, want := s.Sites(), []string{"a.example", "b.example", logtally.DefaultSite}; !slices.Equal(got, want) {
		t.Errorf("Sites() after reopening = %v, want %v", got, want)
	}
	for _, sh := range twoSites {
		si := mustSite(t, s, sh.site)
		if len(si.log.days) == 0 {
			t.Errorf("%s: no path log loaded", sh.site)
		}
		checkSitePending(t, s, sh.site)
		if got := readAll(t, si); got != before[sh.site] {
			t.Errorf("%s after reopening:\n%s\nwant\n%s", sh.site, got, before[sh.site])
		}
	}
	if err := s.compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, sh := range twoSites {
		si := mustSite(t, s, sh.site)
		n := 0
		s.db.View(func(tx *bolt.Tx) error { n = si.bucket(tx, bucketPathLog).Stats().KeyN; return nil })
		if n != 0 || len(si.log.days) != 0 {
			t.Errorf("%s: %d log values, %d pending days after compaction", sh.site, n, len(si.log.days))
		}
		if got := readAll(t, si); got != before[sh.site] {
			t.Errorf("%s after compaction:\n%s\nwant\n%s", sh.site, got, before[sh.site])
		}
	}
}

// TestCompactWantedOnlyGrownLogs: the compaction a commit asks for
// compacts the site whose log grew, not every site's.
func TestCompactWantedOnlyGrownLogs(t *testing.T) {
	s := mustOpen(t, Config{})
	if err := s.Commit(siteBatch(twoSites[0], 1), siteBatch(twoSites[1], 1)); err != nil {
		t.Fatal(err)
	}
	a, b := mustSite(t, s, "a.example"), mustSite(t, s, "b.example")
	s.writeMu.Lock()
	a.log.compactAt = 1 // as if its log had grown past its bound
	s.writeMu.Unlock()
	if err := s.compactWanted(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(a.log.days) != 0 || len(b.log.days) == 0 {
		t.Errorf("after compactWanted: a.example %d pending days, b.example %d; want 0 and some",
			len(a.log.days), len(b.log.days))
	}
}

// TestPrunePerSite: each site's retention counts back from its own newest
// line; a site whose lines stopped keeps what it has.
func TestPrunePerSite(t *testing.T) {
	clock := t0.Add(60 * day)
	s := mustOpenAt(t, Config{MinuteRetention: 14 * day}, func() time.Time { return clock })
	old := tally.NewSiteBatch("old.example")
	busy := tally.NewSiteBatch("busy.example")
	for d := range int64(30) {
		addHit(old, page(d*3600, 1, "/"), 200, 0, false) // all within t0's day and the next
		if d < 15 {
			addHit(busy, page(d*86400, 1, "/"), 200, 0, false)
		}
	}
	if err := s.Commit(old, busy); err != nil {
		t.Fatal(err)
	}
	busy = tally.NewSiteBatch("busy.example")
	for d := int64(15); d < 30; d++ {
		addHit(busy, page(d*86400, 1, "/"), 200, 0, false)
	}
	if err := s.Commit(busy); err != nil {
		t.Fatal(err)
	}
	pruned, err := s.Prune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pruned {
		got = append(got, fmt.Sprintf("%s %s %d", p.Site, p.What, p.Count))
	}
	if want := []string{"busy.example minutes 15"}; !slices.Equal(got, want) {
		t.Errorf("pruned %v, want %v", got, want)
	}
	for _, tt := range []struct {
		site    string
		minutes int
	}{{"old.example", 30}, {"busy.example", 15}} {
		m, err := mustSite(t, s, tt.site).Minutes(t0, clock)
		if err != nil || len(m) != tt.minutes {
			t.Errorf("%s: %d minutes after pruning, %v; want %d", tt.site, len(m), err, tt.minutes)
		}
	}
	from, ok, err := mustSite(t, s, "busy.example").KeptFrom(time.Minute)
	if want := t0.Add(29*day - 14*day); err != nil || !ok || !from.Equal(want) {
		t.Errorf("busy.example KeptFrom(1m) = %v, %t, %v; want %v", from, ok, err, want)
	}
}

// TestCopySite copies the default site to the all-sites view: every answer
// is the same, commits into the copy go on from it (its path log numbered
// after the copied one), and a site that exists is never overwritten.
func TestCopySite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path})
	hits := siteHits{logtally.DefaultSite, twoSites[0].hits}
	b := siteBatch(hits, 1)
	addHit(b, page(110, 6, "/live"), 200, 100, true)
	hits.hits = append(slices.Clone(hits.hits), page(110, 6, "/live"))
	b.SetWindowStart(t0.Unix())
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, s)

	for _, tt := range []struct {
		from, to string
		copied   bool
	}{
		{logtally.DefaultSite, logtally.AllSites, true},
		{logtally.DefaultSite, logtally.AllSites, false}, // exists now
		{"none.example", "c.example", false},             // no such site
		{"a.example", logtally.DefaultSite, false},
	} {
		copied, err := s.CopySite(tt.from, tt.to)
		if err != nil || copied != tt.copied {
			t.Errorf("CopySite(%s, %s) = %t, %v; want %t", tt.from, tt.to, copied, err, tt.copied)
		}
	}
	all := mustSite(t, s, logtally.AllSites)
	if got := readAll(t, all); got != want {
		t.Errorf("the copy answers\n%s\nwant\n%s", got, want)
	}
	checkSitePending(t, s, logtally.AllSites)
	secs, err := all.WindowSeconds(t0.Unix(), t0.Unix()+120)
	if err != nil || len(secs) == 0 {
		t.Errorf("the copy's window seconds: %d, %v", len(secs), err)
	}
	if _, err := s.CopySite(logtally.DefaultSite, "a/b"); err == nil {
		t.Error("CopySite to an invalid name succeeded")
	}

	// The copy goes on from what it copied; the default site is left alone.
	more := siteHits{logtally.AllSites, []logtally.Hit{page(90, 7, "/a"), page(100, 8, "/z")}}
	if err := s.Commit(siteBatch(more, 2)); err != nil {
		t.Fatal(err)
	}
	checkSitePending(t, s, logtally.AllSites)
	both := siteHits{logtally.DefaultSite, append(slices.Clone(hits.hits), more.hits...)}
	wantAll := alone(t, both)
	if got := readAll(t, all); got != wantAll {
		t.Errorf("the copy after a commit:\n%s\nwant\n%s", got, wantAll)
	}
	if got := readAll(t, s); got != want {
		t.Errorf("the default site after a commit to the copy:\n%s\nwant\n%s", got, want)
	}
	s = reopen(t, s)
	if got := readAll(t, mustSite(t, s, logtally.AllSites)); got != wantAll {
		t.Errorf("the copy after reopening:\n%s\nwant\n%s", got, wantAll)
	}
}

// TestCopySiteLeavesOutbox: the outbox, which lives under the default
// site's buckets, is not copied with it.
func TestCopySiteLeavesOutbox(t *testing.T) {
	s := mustOpen(t, Config{Outbox: true})
	if err := s.Commit(outboxBatch(1)); err != nil {
		t.Fatal(err)
	}
	if copied, err := s.CopySite(logtally.DefaultSite, logtally.AllSites); err != nil || !copied {
		t.Fatalf("CopySite = %t, %v", copied, err)
	}
	s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSites).Bucket([]byte(logtally.AllSites)).Bucket(bucketOutbox) != nil {
			t.Error("the outbox was copied")
		}
		return nil
	})
	if st, _ := s.Outbox().Stats(); st.Entries != 1 {
		t.Errorf("outbox after the copy: %+v", st)
	}
}

// TestSingleSiteFileOpensUnchanged: a file of schema 3 holding the default
// site alone, as the single-site version wrote it, opens without a change
// of layout, and its data reads the same through the store and its
// default site.
func TestSingleSiteFileOpensUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path})
	commit(t, s, func(b *tally.Batch) {
		for _, h := range twoSites[0].hits {
			addHit(b, h, 200, 100, false)
		}
	})
	want := readAll(t, s)
	s.Close()
	layout := func() string {
		t.Helper()
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var out []string
		db.View(func(tx *bolt.Tx) error {
			out = append(out, fmt.Sprint("schema ", binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keySchema))))
			return tx.Bucket(bucketSites).ForEach(func(site, _ []byte) error {
				return tx.Bucket(bucketSites).Bucket(site).ForEach(func(name, _ []byte) error {
					out = append(out, string(site)+"/"+string(name))
					return nil
				})
			})
		})
		return fmt.Sprint(out)
	}
	var buckets []string
	for _, b := range siteBuckets {
		buckets = append(buckets, "default/"+string(b))
	}
	slices.Sort(buckets)
	if got, want := layout(), fmt.Sprint(append([]string{fmt.Sprint("schema ", SchemaVersion)}, buckets...)); got != want {
		t.Fatalf("layout of a single-site file:\n%s\nwant\n%s", got, want)
	}
	before := layout()

	s = mustOpen(t, Config{Path: path})
	if got := s.Sites(); !slices.Equal(got, []string{logtally.DefaultSite}) {
		t.Errorf("Sites() = %v", got)
	}
	if got := readAll(t, s); got != want {
		t.Errorf("Store reads\n%s\nwant\n%s", got, want)
	}
	if got := readAll(t, mustSite(t, s, logtally.DefaultSite)); got != want {
		t.Errorf("Site(default) reads\n%s\nwant\n%s", got, want)
	}
	s.Close()
	if got := layout(); got != before {
		t.Errorf("opening changed the layout:\n%s\nwant\n%s", got, before)
	}
	r, err := OpenReadOnly(Config{Path: path, TZ: "UTC"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := readAll(t, r); got != want {
		t.Errorf("read only:\n%s\nwant\n%s", got, want)
	}
}

// TestOutboxEntryPerSite: in fleet mode each batch of a commit with counts
// has its own entry, numbered in the one outbox, naming its site.
func TestOutboxEntryPerSite(t *testing.T) {
	s := mustOpen(t, Config{Outbox: true})
	positions := tally.NewSiteBatch("c.example")
	positions.SetPosition("c.log", 5)
	if err := s.Commit(siteBatch(twoSites[0], 1), positions, siteBatch(twoSites[1], 1)); err != nil {
		t.Fatal(err)
	}
	var got []string
	var after uint64
	for {
		e, ok, err := s.Outbox().Next(after)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		var b tally.Batch
		if err := b.UnmarshalBinary(e.Batch); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %d", e.Seq, b.Site(), b.MinuteCount()))
		after = e.Seq
	}
	if want := []string{"1 a.example 2", "2 b.example 3"}; !slices.Equal(got, want) {
		t.Errorf("outbox entries %v, want %v", got, want)
	}
}

// TestDescribeSiteBuckets: a damaged bucket of any site is named and said
// what it holds.
func TestDescribeSiteBuckets(t *testing.T) {
	for _, tt := range []struct {
		path []string
		want string
	}{
		{[]string{"sites", "default", "minutes"}, "per-minute counts (bucket sites/default/minutes)"},
		{[]string{"sites", "a.example", "pathlog"}, "page views per path not yet compacted (bucket sites/a.example/pathlog)"},
		{[]string{"sites", "(all)"}, "the buckets of the site (bucket sites/(all))"},
		{[]string{"sites", "a.example", "unknown"}, "bucket sites/a.example/unknown"},
		{[]string{"meta"}, "the file's schema and settings (bucket meta)"},
	} {
		var path [][]byte
		for _, p := range tt.path {
			path = append(path, []byte(p))
		}
		if got := describe(path); got != tt.want {
			t.Errorf("describe(%v) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestAddSites: AddSites creates the sites the store does not hold, empty
// and answering, keeps those it holds as they are, refuses a name that is
// not a site's, and what it created is there after reopening.
func TestAddSites(t *testing.T) {
	s := mustOpen(t, Config{})
	if err := s.Commit(siteBatch(twoSites[0], 1)); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, mustSite(t, s, twoSites[0].site))
	show := logtally.CounterSite("show")
	if err := s.AddSites(show, twoSites[0].site, show); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, mustSite(t, s, twoSites[0].site)); got != before {
		t.Errorf("a held site after AddSites:\n%s\nwant\n%s", got, before)
	}
	series, err := mustSite(t, s, show).Series(t0, t0.Add(time.Hour), time.Hour)
	if err != nil || len(series.Points) != 2 || series.Points[0].Requests != 0 {
		t.Errorf("a new site's series = %+v, %v; want two points of zeros", series, err)
	}
	if err := s.AddSites("Not A Site"); err == nil {
		t.Error("AddSites took a name that is no site's")
	}
	s = reopen(t, s)
	if got, want := s.Sites(), []string{"a.example", show, logtally.DefaultSite}; !slices.Equal(got, want) {
		t.Errorf("Sites() after reopening = %v, want %v", got, want)
	}
}

// TestShareSites: a new site shares another's history, which commits of its
// batches leave alone and readers read through Shares, also after
// reopening; a site with a history of its own does not; Unshare gives a
// sharing site a copy of the history.
func TestShareSites(t *testing.T) {
	s := mustOpen(t, Config{})
	a, b := twoSites[0].site, twoSites[1].site
	if err := s.Commit(siteBatch(twoSites[0], 1), siteBatch(twoSites[1], 1)); err != nil {
		t.Fatal(err)
	}
	shared, err := s.ShareSites(Share{b, a}, Share{"c.example", a})
	if err != nil || !slices.Equal(shared, []string{"c.example"}) {
		t.Fatalf("ShareSites = %v, %v; want the new site alone: the other has a history", shared, err)
	}
	ab := siteBatch(twoSites[0], 2)
	ab.SetAlso([]string{"c.example"})
	if err := s.Commit(ab); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, mustSite(t, s, a))
	s = reopen(t, s)
	if got := s.Shares("c.example"); got != a {
		t.Fatalf("Shares after reopening = %s, want %s", got, a)
	}
	if got := readAll(t, mustSite(t, s, "c.example")); got == want {
		t.Error("the sharing site's own buckets hold the history")
	}
	if err := s.Unshare("c.example"); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, mustSite(t, s, "c.example")); s.Shares("c.example") != "c.example" || got != want {
		t.Errorf("after Unshare:\n%s\nwant\n%s", got, want)
	}
}

// TestPruneCommitsOnlyChanges prunes sites whose days are over: the sites'
// days are folded, with their path logs compacted, in one transaction,
// their lazy days stored in another (see lazyday.go), and a pass that
// finds nothing to delete, fold or store commits nothing (a commit costs
// two syncs, and a replay of many sites ends with a pass over each).
func TestPruneCommitsOnlyChanges(t *testing.T) {
	s := mustOpenAt(t, Config{}, func() time.Time { return t0.Add(3 * day) })
	var bs []*tally.Batch
	for _, site := range []string{"a.example", "b.example"} {
		b := tally.NewSiteBatch(site)
		for d := range int64(2) {
			addHit(b, page(d*86400, 1, "/"+site), 200, 0, false)
			addHit(b, page(d*86400+60, 2, "/x"), 200, 0, false)
		}
		bs = append(bs, b)
	}
	if err := s.Commit(bs...); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		pass    string
		commits int
	}{{"first", 2}, {"second", 0}} {
		before := lastTx(t, s)
		if _, err := s.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := lastTx(t, s) - before; got != tt.commits {
			t.Errorf("%s pass: %d commits, want %d", tt.pass, got, tt.commits)
		}
	}
	for _, site := range []string{"a.example", "b.example"} {
		got, err := mustSite(t, s, site).PathCounts([]string{"/" + site, "/x"}, t0)
		want := []logtally.PathCount{{Path: "/" + site, Day: 1, Total: 2}, {Path: "/x", Day: 1, Total: 2}}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: PathCounts = %+v, %v; want %+v", site, got, err, want)
		}
	}
}
