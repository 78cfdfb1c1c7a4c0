package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// TestPruneIsSiteBySite: Prune, whose sites share transactions, leaves
// every site's file contents, its visitor-set bookkeeping and its path
// counts as pruning the sites one by one, each step in transactions of its
// own site's (oldPrune, Prune as it was), did, and says it deleted the
// same; through random commits of many sites (late lines into old minutes
// and days among them), moves of the clock, prunes and reopens.
func TestPruneIsSiteBySite(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testPruneIsSiteBySite(t, seed) })
	}
}

func testPruneIsSiteBySite(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	now := t0
	clock := func() time.Time { return now }
	cfg := Config{MinuteRetention: 8 * time.Hour, HourRetention: 3 * 24 * time.Hour, DayRetention: 8 * 24 * time.Hour,
		ExactVisitorsSpan: 40 * time.Minute, ApplyRetention: true, TZ: "UTC"}
	stores := [2]*Store{}
	for i := range stores {
		c := cfg
		c.Path = fmt.Sprintf("%s/db%d", t.TempDir(), i)
		stores[i] = noSync(mustOpenAt(t, c, clock))
	}
	var sites []string
	for i := range 35 {
		sites = append(sites, fmt.Sprintf("s%02d.example", i))
	}
	sites = append(sites, logtally.DefaultSite)
	newest := t0 // the newest line so far
	for step := range 100 {
		switch r := rng.IntN(100); {
		case r < 63:
			hits := randomHits(rng, sites, newest)
			if r >= 60 {
				// Every site's every minute of the retention: more sets
				// than a compaction transaction turns, and more minutes
				// than it looks at once the store is reopened.
				hits = everyMinute(rng, sites, newest, cfg.MinuteRetention)
			}
			newest = commitBoth(t, step, stores, hits, newest)
			if at := newest.Add(time.Duration(rng.IntN(120)) * time.Second); at.After(now) {
				now = at
			}
		case r < 75:
			d := time.Duration(rng.IntN(90)) * time.Minute
			if rng.IntN(5) == 0 {
				d = time.Duration(rng.IntN(48)) * time.Hour
			}
			newest, now = newest.Add(d), now.Add(d)
		case r < 95:
			pruneBoth(t, step, stores, sites, now)
		default:
			for i, s := range stores {
				stores[i] = noSync(reopen(t, s))
			}
		}
	}
	pruneBoth(t, -1, stores, sites, now)
}

// pruneBoth prunes stores[0] with Prune and stores[1] site by site, and
// fails unless they say they deleted the same and hold the same after.
func pruneBoth(t *testing.T, step int, stores [2]*Store, sites []string, now time.Time) {
	t.Helper()
	got, gotErr := stores[0].Prune(context.Background())
	want, wantErr := oldPrune(context.Background(), stores[1])
	if gotErr != nil || wantErr != nil {
		t.Fatalf("step %d: prune: %v; site by site: %v", step, gotErr, wantErr)
	}
	for i := range max(len(got), len(want)) {
		var g, w Pruned
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("step %d: pruned #%d %+v, site by site %+v (%d, %d in all)", step, i, g, w, len(got), len(want))
		}
	}
	compareStores(t, step, stores[0], stores[1], sites, now)
}

// commitBoth commits the batches of hits to both stores, and returns the
// newest of newest and the hits' times.
func commitBoth(t *testing.T, step int, stores [2]*Store, hits []siteHit, newest time.Time) time.Time {
	t.Helper()
	for _, s := range stores {
		if err := s.Commit(hitBatches(hits)...); err != nil {
			t.Fatalf("step %d: commit: %v", step, err)
		}
	}
	for _, h := range hits {
		if at := time.Unix(h.hit.Time, 0); at.After(newest) {
			newest = at
		}
	}
	return newest
}

// noSync has s commit without syncing the file: the test compares what
// the transactions leave, and syncs would be most of its time.
func noSync(s *Store) *Store {
	s.db.NoSync = true
	return s
}

// siteHit is a hit of a site, as randomHits makes them.
type siteHit struct {
	site string
	hit  logtally.Hit
}

// randomHits returns hits of a few random sites: most within minutes of
// newest or a little past it, some late, hours or days before it.
func randomHits(rng *rand.Rand, sites []string, newest time.Time) []siteHit {
	var hits []siteHit
	for _, i := range rng.Perm(len(sites))[:1+rng.IntN(len(sites))] {
		for range 1 + rng.IntN(12) {
			at := newest.Add(time.Duration(rng.IntN(600)-480) * time.Second)
			if rng.IntN(8) == 0 {
				at = newest.Add(-time.Duration(rng.IntN(5*24*60)) * time.Minute)
			}
			h := logtally.Hit{Time: at.Unix(), PageView: rng.IntN(4) > 0, Visitor: rng.Uint64N(40) + 1,
				Path: fmt.Appendf(nil, "/p%d", rng.IntN(15)), Status: 200, Bytes: 10}
			hits = append(hits, siteHit{sites[i], h})
		}
	}
	return hits
}

// everyMinute returns a hit of each site in each minute of the span before
// newest.
func everyMinute(rng *rand.Rand, sites []string, newest time.Time, span time.Duration) []siteHit {
	var hits []siteHit
	for _, site := range sites {
		for at := newest.Add(-span + time.Minute); !at.After(newest); at = at.Add(time.Minute) {
			h := logtally.Hit{Time: at.Unix(), PageView: true, Visitor: rng.Uint64N(40) + 1,
				Path: fmt.Appendf(nil, "/p%d", rng.IntN(15)), Status: 200, Bytes: 10}
			hits = append(hits, siteHit{site, h})
		}
	}
	return hits
}

// hitBatches returns the batches of hits, new ones each call: a commit
// sorts its batches' visitors in place.
func hitBatches(hits []siteHit) []*tally.Batch {
	by := make(map[string]*tally.Batch)
	var out []*tally.Batch
	for _, sh := range hits {
		b := by[sh.site]
		if b == nil {
			b = tally.NewSiteBatch(sh.site)
			by[sh.site] = b
			out = append(out, b)
		}
		h := sh.hit
		b.Add(&h, false)
	}
	return out
}

// compareStores fails unless a and b hold the same keys and values, with
// the same visitor-set bookkeeping and path counts for every site.
func compareStores(t *testing.T, step int, a, b *Store, sites []string, now time.Time) {
	t.Helper()
	da, db := dumpStore(t, a), dumpStore(t, b)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(da)) {
		if db[k] != da[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %q, site by site %q", k, da[k], db[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(db)) {
		if _, ok := da[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: missing, site by site %q", k, db[k]))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("step %d: %d values differ from pruning site by site:\n%s", step, len(diffs), strings.Join(diffs[:min(len(diffs), 10)], "\n"))
	}
	paths := []string{"/p0", "/p3", "/p7", "/p14", logtally.OtherPath}
	for _, name := range sites {
		sa, okA := a.Site(name)
		sb, okB := b.Site(name)
		if okA != okB {
			t.Fatalf("step %d: site %s held %v, site by site %v", step, name, okA, okB)
		}
		if !okA {
			continue
		}
		a.writeMu.Lock()
		fa := sa.setsFrom
		a.writeMu.Unlock()
		b.writeMu.Lock()
		fb := sb.setsFrom
		b.writeMu.Unlock()
		if !bytes.Equal(fa, fb) {
			t.Errorf("step %d: site %s: sets looked for from %x, site by site %x", step, name, fa, fb)
		}
		for _, day := range []time.Time{now, now.Add(-24 * time.Hour), now.Add(-48 * time.Hour)} {
			ca, errA := sa.PathCounts(paths, day)
			cb, errB := sb.PathCounts(paths, day)
			if errA != nil || errB != nil || fmt.Sprint(ca) != fmt.Sprint(cb) {
				t.Errorf("step %d: site %s: paths on %s: %+v (%v), site by site %+v (%v)", step, name,
					day.Format(time.DateOnly), ca, errA, cb, errB)
			}
		}
	}
}

// dumpStore returns every key of every bucket of s with its value, and
// every bucket's sequence, by path.
func dumpStore(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := make(map[string]string)
	var walk func(prefix string, b *bolt.Bucket) error
	walk = func(prefix string, b *bolt.Bucket) error {
		out[prefix+" seq"] = fmt.Sprint(b.Sequence())
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(fmt.Sprintf("%s/%q", prefix, k), b.Bucket(k))
			}
			out[fmt.Sprintf("%s/%x", prefix, k)] = string(v)
			return nil
		})
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(fmt.Sprintf("%q", name), b) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oldPrune is Prune as it was before the sites shared its transactions:
// each site in turn, each step of it in transactions of its own.
func oldPrune(ctx context.Context, s *Store) ([]Pruned, error) {
	now := s.now()
	var out []Pruned
	for _, si := range s.siteList() {
		pruned, err := si.oldPrune(ctx, now)
		out = append(out, pruned...)
		if err != nil {
			return out, fmt.Errorf("site %s: %w", si.name, err)
		}
	}
	return out, nil
}

func (s *Site) oldPrune(ctx context.Context, now time.Time) ([]Pruned, error) {
	var f floors
	if err := s.st.view(func(tx *bolt.Tx) error { f = s.floors(tx); return nil }); err != nil {
		return nil, err
	}
	jobs := s.pruneJobs(f, s.st.Retention())
	if err := s.oldTidy(ctx, now); err != nil {
		return nil, err
	}
	// Lazy days, site by site too (storeLazyDays shares them).
	if err := s.st.storeLazyAlone(s, f); err != nil {
		return nil, err
	}
	var out []Pruned
	for _, j := range jobs {
		p, err := s.oldRunJob(ctx, j)
		if p.Count > 0 {
			out = append(out, p)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *Site) oldTidy(ctx context.Context, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	days, err := s.daysToFold(dayKey(now, s.loc))
	if err != nil {
		return err
	}
	for rest := days; len(rest) > 0; {
		n := min(len(rest), maxFoldDays)
		if err := s.oldFoldDaysTx(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	if len(days) == 0 {
		if err := s.st.compactLogs(ctx, []*Site{s}); err != nil { // a transaction of its own
			return err
		}
	}
	last, ok, err := s.Last()
	if err != nil || !ok {
		return err
	}
	_, err = s.oldCompactSets(ctx, minuteKey(last.Add(-s.cfg.ExactVisitorsSpan)), now)
	return err
}

func (s *Site) oldFoldDaysTx(days [][]byte) error {
	s.st.writeMu.Lock()
	defer s.st.writeMu.Unlock()
	return s.st.writeTx(func(tx *bolt.Tx) ([]siteChange, error) {
		ch, err := s.compactTx(tx, nil)
		if err != nil {
			return nil, err
		}
		changes := []siteChange{{s.log, ch}}
		for _, day := range days {
			if err := s.foldDay(tx, day); err != nil {
				return nil, err
			}
		}
		return changes, nil
	})
}

func (s *Site) oldCompactSets(ctx context.Context, end []byte, now time.Time) (int, error) {
	s.st.writeMu.Lock()
	from := s.setsFrom
	s.setsFrom = end
	s.st.writeMu.Unlock()
	var buf sketchBuf
	total := 0
	var kept []byte
	at := from
	var err error
	for {
		if err = ctx.Err(); err != nil {
			break
		}
		var n int
		var next []byte
		n, next, err = s.oldCompactSetsLocked(at, end, now, &kept, &buf)
		total += n
		if err != nil || next == nil {
			break
		}
		at = next
	}
	s.st.writeMu.Lock()
	if err != nil {
		s.setsFrom = lowerKey(s.setsFrom, at)
	}
	if kept != nil {
		s.setsFrom = lowerKey(s.setsFrom, kept)
	}
	s.st.writeMu.Unlock()
	return total, err
}

func (s *Site) oldCompactSetsLocked(from, end []byte, now time.Time, kept *[]byte, buf *sketchBuf) (int, []byte, error) {
	s.st.writeMu.Lock()
	defer s.st.writeMu.Unlock()
	recent := s.written.recent(now)
	keep := func(k []byte) bool { return recent(int64(uint64Key(k))) }
	var n int
	var next []byte
	err := s.st.update(func(tx *bolt.Tx) error {
		var err error
		budget := setsBudget{turn: pruneBatch, scan: scanBatch}
		n, next, err = s.compactSetsTx(tx, from, end, keep, kept, buf, &budget)
		if err == nil && n == 0 {
			return errNothingToDelete
		}
		return err
	})
	switch {
	case errors.Is(err, errNothingToDelete):
		return 0, next, nil
	case err != nil:
		return 0, next, err
	}
	return n, next, nil
}

func (s *Site) oldRunJob(ctx context.Context, j pruneJob) (Pruned, error) {
	p := Pruned{Site: s.name, What: j.what, KeptFrom: j.unit(j.end), Keep: j.keep}
	var prev []byte
	for {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		var keys [][]byte
		err := s.st.update(func(tx *bolt.Tx) error {
			b := s.bucket(tx, j.name)
			keys = keys[:0]
			c := b.Cursor()
			for k, _ := c.First(); k != nil && bytes.Compare(k, j.end) < 0 && len(keys) < pruneBatch; k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			if len(keys) == 0 {
				return errNothingToDelete
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, errNothingToDelete) {
			return p, nil
		}
		if err != nil {
			return p, err
		}
		for _, k := range keys {
			if prev != nil && bytes.Equal(prev[:j.prefix], k[:j.prefix]) {
				continue
			}
			if p.Count == 0 {
				p.From = j.unit(k)
			}
			p.Count++
			p.To = j.unit(k)
			prev = k
		}
		if len(keys) < pruneBatch {
			return p, nil
		}
	}
}
