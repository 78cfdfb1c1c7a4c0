package fleet

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/tally"
)

// openClocks opens a store for cfg.Node on url whose node's clock is at
// clock and the database's at db.
func openClocks(t *testing.T, url string, cfg Config, clock, db time.Time) *Store {
	t.Helper()
	cfg.URL = pinClock(url, db)
	s, err := Open(testContext(t), cfg, discard())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	s.Now = func() time.Time { return clock }
	return s
}

// register registers s's node (testIdent), which records its --window and
// --max-skew in logtally.nodes.
func register(t *testing.T, s *Store) {
	t.Helper()
	if _, _, err := s.Register(testContext(t), testIdent(s.cfg.Node), false); err != nil {
		t.Fatal(err)
	}
}

// refresh reads s's View once, as its node's Refresher does every second.
func refresh(t *testing.T, s *Store) *View {
	t.Helper()
	r := NewRefresher(s, logtally.DefaultSite, discard())
	defer r.Close()
	if err := r.Refresh(testContext(t)); err != nil {
		t.Fatalf("Refresh of %s: %v", s.cfg.Node, err)
	}
	return r.Current()
}

// skewLines dates node's lines of w later by ahead, as a node whose clock
// (and so its nginx's) runs that far ahead writes them, marks live those in
// the window of its clock, at clock, and rebuilds its batches.
func skewLines(w *workload, node int, ahead time.Duration, clock time.Time) {
	batches := w.batches[node]
	for i := range batches {
		batches[i] = tally.NewBatch()
	}
	for i := range w.lines {
		l := &w.lines[i]
		if l.node != node {
			continue
		}
		l.t += int64(ahead / time.Second)
		b := batches[l.batch]
		b.AddLines(1)
		if l.rejected {
			b.Reject(l.t)
			continue
		}
		l.live = l.t >= clock.Unix()-liveSpan
		b.Add(&logtally.Hit{Time: l.t, Visitor: l.visitor, Path: []byte(l.path), Bytes: l.bytes, Status: l.status,
			PageView: l.visitor != 0}, l.live)
	}
}

// TestSkewedNodeClock: of three nodes, one's clock (and its nginx's, which
// dates the lines) runs 5 minutes ahead of the database's. Every node reads
// the same window, ending at the database's clock: the honest nodes' lines
// and the skewed node's live ones dated up to the database's clock plus
// --max-skew; those beyond are left out of the live window and count in the
// history only. The skewed node's pruning deletes nothing the window needs,
// and its offset is reported.
func TestSkewedNodeClock(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.Database(t)
	db := time.Unix(t0+600, 0) // the database's clock, and the honest nodes'
	const ahead = 5 * time.Minute
	w := generate(rand.New(rand.NewPCG(81, 82)), 3, 3, 400)
	skewLines(w, 2, ahead, db.Add(ahead))
	stores := make([]*Store, 3)
	for n := range stores {
		cfg := DefaultConfig()
		cfg.Verifier = testVerifier
		cfg.Node = nodeName(n)
		clock := db
		if n == 2 {
			clock = db.Add(ahead)
		}
		stores[n] = openClocks(t, url, cfg, clock, db)
		register(t, stores[n])
		refresh(t, stores[n]) // measures the node's clock, as its Refresher does every second
	}
	applyAll(t, stores, w)
	if _, err := stores[2].Prune(ctx); err != nil {
		t.Fatal(err)
	}

	truth := slices.Clone(w.lines)
	var future int64
	for i, l := range truth {
		if l.node == 2 && l.live && l.t > db.Add(DefaultMaxSkew).Unix() {
			truth[i].live = false
			future++
		}
	}
	if future == 0 {
		t.Fatal("no line of the skewed node is dated beyond the skew allowed: the test tests nothing")
	}
	want := wantWindow(truth, db.Unix(), int64(DefaultWindow/time.Second))
	for n, s := range stores {
		v := refresh(t, s)
		if !v.AsOf.Equal(db) {
			t.Errorf("%s: View as of %s, want the database's clock, %s", nodeName(n), v.AsOf, db)
		}
		if !equalSnapshots(v.Window, want) {
			t.Errorf("%s: window =\n%+v\nwant\n%+v", nodeName(n), v.Window, want)
		}
	}
	// History is keyed by the lines' own time: every line counts there.
	from, to := db.Add(-time.Hour), db.Add(ahead)
	if got, err := stores[0].Series(ctx, logtally.DefaultSite, from, to, time.Minute); err != nil ||
		!equalSeries(got, wantSeries(w.lines, from, to, time.Minute, time.UTC)) {
		t.Errorf("Series = %+v, %v; want every line by its own time", got, err)
	}

	for n, s := range stores {
		var wantOffset time.Duration
		var wantFuture int64
		if n == 2 {
			wantOffset, wantFuture = ahead, future
		}
		if got := s.ClockStats(); got.Offset != wantOffset || got.Measured.IsZero() || got.Future != wantFuture {
			t.Errorf("%s: ClockStats = %+v, want offset %s, measured, %d future lines", nodeName(n), got, wantOffset, wantFuture)
		}
		var ms *int64
		err := s.pool.QueryRow(ctx, "SELECT clock_offset_ms FROM logtally.nodes WHERE name = $1", nodeName(n)).Scan(&ms)
		if err != nil || ms == nil || *ms != wantOffset.Milliseconds() {
			t.Errorf("%s: logtally.nodes.clock_offset_ms = %v, %v; want %d", nodeName(n), ms, err, wantOffset.Milliseconds())
		}
	}
}

// TestPruneKeepsLongestWindow: a node with --window 1m prunes the live
// window's rows by the longest window and skew any registered node uses,
// so another node's 10-minute window stays exact, and only what no node's
// window needs goes.
func TestPruneKeepsLongestWindow(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.Database(t)
	db := time.Unix(t0+900, 0) // five minutes after the newest line
	w := generate(rand.New(rand.NewPCG(91, 92)), 2, 2, 300)
	long := DefaultConfig()
	long.Verifier = testVerifier
	long.Node = "long"
	short := long
	short.Node, short.Window = "short", time.Minute
	stores := []*Store{openClocks(t, url, long, db, db), openClocks(t, url, short, db, db)}
	for _, s := range stores {
		register(t, s)
	}
	applySerial(t, stores[0], w)
	got, err := stores[1].Prune(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got["seconds"] == 0 {
		t.Errorf("pruned %v; want the seconds no window needs", got)
	}
	for _, s := range stores {
		want := wantWindow(w.lines, db.Unix(), int64(s.cfg.Window/time.Second))
		if v := refresh(t, s); !equalSnapshots(v.Window, want) {
			t.Errorf("%s's window after the short node pruned =\n%+v\nwant\n%+v", s.cfg.Node, v.Window, want)
		}
	}
	keep := db.Add(-DefaultWindow - DefaultMaxSkew)
	var old int
	if err := stores[0].pool.QueryRow(ctx, "SELECT count(*) FROM logtally.seconds WHERE second <= $1", keep).Scan(&old); err != nil || old != 0 {
		t.Errorf("%d seconds at or before %s kept (%v); want none", old, keep, err)
	}
}
