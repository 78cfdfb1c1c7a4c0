package fleet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
)

// applySerial ships a workload's batches from s, node after node.
func applySerial(t *testing.T, s *Store, w *workload) {
	t.Helper()
	ctx := testContext(t)
	for n, bs := range w.batches {
		for i, b := range bs {
			if applied, err := apply(ctx, s, nodeName(n), uint64(i+1), b); !applied || err != nil {
				t.Fatalf("Apply %s/%d = %v, %v", nodeName(n), i+1, applied, err)
			}
		}
	}
}

func waitUpdate(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatal("no View published within a minute")
	}
}

// TestRefresherPublishes checks that the refresher publishes the fleet's
// window and recent series, keeps the last View while PostgreSQL is down,
// says why, and recovers.
func TestRefresherPublishes(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t) // its own: the test stops it
	now := time.Unix(t0+600, 0)
	cfg := DefaultConfig()
	cfg.Verifier = testVerifier
	cfg.URL, cfg.Node, cfg.Refresh = pinClock(srv.URL(), now), "a", 10*time.Millisecond
	s, err := Open(testContext(t), cfg, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Now = func() time.Time { return now }
	w := generate(rand.New(rand.NewPCG(51, 52)), 3, 2, 300)
	applySerial(t, s, w)

	r := NewRefresher(s, logtally.DefaultSite, discard())
	defer r.Close()
	waitUpdate(t, r.Updated())
	v := r.Current()
	if v == nil || !v.AsOf.Equal(now) {
		t.Fatalf("View = %+v, want one as of %s", v, now)
	}
	if want := wantWindow(w.lines, now.Unix(), int64(DefaultWindow/time.Second)); !equalSnapshots(v.Window, want) {
		t.Errorf("View.Window = %+v\nwant %+v", v.Window, want)
	}
	if want := wantSeries(w.lines, now.Add(-SeriesSpan), now, time.Minute, time.UTC); !equalSeries(v.Series, want) {
		t.Errorf("View.Series = %+v\nwant %+v", v.Series, want)
	}
	// The refresher may have published again, from the same rows, since
	// v was read: what Close keeps is the last one.
	r.Close()
	if v = r.Current(); v == nil || !v.AsOf.Equal(now) {
		t.Error("Close dropped the last View")
	}

	// PostgreSQL down: the View stays, the error is reported.
	srv.StopImmediate()
	if err := r.Refresh(testContext(t)); err == nil {
		t.Fatal("Refresh with PostgreSQL down succeeded")
	}
	if at, err := r.LastError(); err == nil || !at.Equal(now) {
		t.Errorf("LastError = %s, %v; want the failure at %s", at, err, now)
	}
	if r.Current() != v {
		t.Error("a failed refresh replaced the View")
	}
	srv.Restart()
	updated := r.Updated()
	if err := r.Refresh(testContext(t)); err != nil {
		t.Fatalf("Refresh after restart: %v", err)
	}
	waitUpdate(t, updated)
	if _, err := r.LastError(); err != nil {
		t.Errorf("LastError after recovery = %v", err)
	}
}

// TestApplyLateBatchAfterVisitorSpan ships a batch whose minutes, hours and
// day ended longer than the visitor span ago: their sets may be pruned, so
// its visitors are left out and the buckets say approximate, while the
// other counts are exact.
func TestApplyLateBatchAfterVisitorSpan(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Database(t), "a", time.Unix(t0+96*3600, 0)) // the next day ended two days ago
	w := generate(rand.New(rand.NewPCG(61, 62)), 1, 1, 200)
	applySerial(t, s, w)
	ctx := testContext(t)
	for _, step := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
		got, err := s.Series(ctx, logtally.DefaultSite, time.Unix(t0-1300, 0), time.Unix(t0+700, 0), step)
		if err != nil {
			t.Fatal(err)
		}
		want := wantSeries(w.lines, time.Unix(t0-1300, 0), time.Unix(t0+700, 0), step, time.UTC)
		for i := range want.Points {
			want.Points[i].Visitors = 0
		}
		want.Approximate = true
		if !equalSeries(got, want) {
			t.Errorf("Series %s =\n%+v\nwant\n%+v", step, got, want)
		}
	}
	var sets int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM logtally.minute_visitors)
		+ (SELECT count(*) FROM logtally.hour_visitors) + (SELECT count(*) FROM logtally.day_visitors)`).Scan(&sets); err != nil || sets != 0 {
		t.Errorf("visitor set rows = %d, %v; want none", sets, err)
	}
}

// TestPrune ages the fleet's data step by step and checks what each
// retention removes and that what remains still answers right.
func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.Database(t)
	s := open(t, url, "a", time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(71, 72)), 2, 3, 300)
	applySerial(t, s, w)
	var paths []string
	for i := range 30 {
		paths = append(paths, fmt.Sprintf("/page/%d", i))
	}
	wantPaths := wantPathCounts(w.lines, paths, time.Unix(t0, 0), time.UTC)

	// An hour later: the live window's seconds are gone, history stays.
	got, err := s.Prune(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got["seconds"] == 0 || got["second_paths"] == 0 || got["visitors"] == 0 || got["minute_visitors"] != 0 || got["minutes"] != 0 {
		t.Errorf("pruned after an hour: %v; want seconds, second_paths and visitors only", got)
	}
	if snap, err := s.Window(ctx, logtally.DefaultSite, time.Unix(t0+599, 0), DefaultWindow); err != nil ||
		snap.Requests != 0 || snap.Visitors != 0 || len(snap.Pages) != 0 {
		t.Errorf("Window after pruning = %+v, %v; want empty", snap, err)
	}
	checkSeries := func(when string, approximate ...time.Duration) {
		t.Helper()
		for _, step := range []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour} {
			from, to := time.Unix(t0-1300, 0), time.Unix(t0+700, 0)
			got, err := s.Series(ctx, logtally.DefaultSite, from, to, step)
			if err != nil {
				t.Fatal(err)
			}
			want := wantSeries(w.lines, from, to, step, time.UTC)
			if !slices.Contains(approximate, step) {
				if !equalSeries(got, want) {
					t.Errorf("%s: Series %s =\n%+v\nwant\n%+v", when, step, got, want)
				}
				continue
			}
			// Approximate: visitors between the busiest minute's and the truth.
			minutes := wantSeries(w.lines, from, to, time.Minute, time.UTC)
			if !got.Approximate || len(got.Points) != len(want.Points) {
				t.Fatalf("%s: Series %s = %+v, want approximate", when, step, got)
			}
			for i, p := range got.Points {
				var busiest int64
				for _, m := range minutes.Points {
					if !m.Time.Before(p.Time) && m.Time.Before(p.Time.Add(step)) {
						busiest = max(busiest, m.Visitors)
					}
				}
				if p.Requests != want.Points[i].Requests || p.PageViews != want.Points[i].PageViews ||
					p.Visitors != busiest || p.Visitors > want.Points[i].Visitors {
					t.Errorf("%s: Series %s point %d = %+v, want %+v with visitors %d", when, step, i, p, want.Points[i], busiest)
				}
			}
		}
	}
	checkSeries("after an hour")

	// Past the visitor span: the sets are gone, the counts they made stay;
	// 5- and 15-minute points can no longer be counted distinct.
	later := time.Unix(t0+int64((DefaultVisitorSpan+pruneMargin+2*time.Hour)/time.Second), 0)
	s = open(t, url, "a", later)
	if got, err = s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if got["minute_visitors"] == 0 || got["hour_visitors"] == 0 || got["day_visitors"] == 0 || got["minutes"] != 0 {
		t.Errorf("pruned after the visitor span: %v; want the visitor sets only", got)
	}
	checkSeries("after the visitor span", 5*time.Minute, 15*time.Minute)

	// Past the hours' retention: minutes and hours are gone, days stay, and
	// the per-day page views are folded into the all-time totals.
	much := time.Unix(t0, 0).Add(DefaultHourRetention + 48*time.Hour)
	s = open(t, url, "a", much)
	if got, err = s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if got["minutes"] == 0 || got["hours"] == 0 || got["day_paths"] == 0 || got["days"] != 0 {
		t.Errorf("pruned after the hours' retention: %v; want minutes, hours and day_paths", got)
	}
	counts, err := s.PathCounts(ctx, logtally.DefaultSite, paths, time.Unix(t0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range counts {
		if c.Total != wantPaths[i].Total || c.Day != 0 {
			t.Errorf("PathCounts[%d] after folding = %+v, want total %d and nothing for the pruned day", i, c, wantPaths[i].Total)
		}
	}
	day, err := s.Series(ctx, logtally.DefaultSite, time.Unix(t0-1300, 0), time.Unix(t0+700, 0), 24*time.Hour)
	if want := wantSeries(w.lines, time.Unix(t0-1300, 0), time.Unix(t0+700, 0), 24*time.Hour, time.UTC); err != nil || !equalSeries(day, want) {
		t.Errorf("days after the hours' retention = %+v, %v; want %+v", day, err, want)
	}
}

// TestPruneOneAtATime checks that a node skips pruning while another
// holds the prune lock.
func TestPruneOneAtATime(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := open(t, pgtest.Database(t), "a", time.Unix(t0+3600, 0))
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(pruneLock)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Prune(ctx); got != nil || err != nil {
		t.Errorf("Prune while another prunes = %v, %v; want nil, nil", got, err)
	}
}

func TestSeriesSteps(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := open(t, pgtest.Database(t), "a", time.Unix(t0, 0))
	from := time.Unix(t0, 0)
	for _, step := range []time.Duration{0, 7 * time.Minute, 2 * time.Hour, 30 * time.Second} {
		if _, err := s.Series(ctx, logtally.DefaultSite, from, from.Add(time.Hour), step); !errors.Is(err, logtally.ErrTooManyPoints) {
			t.Errorf("Series step %s = %v, want ErrTooManyPoints", step, err)
		}
	}
	if _, err := s.Series(ctx, logtally.DefaultSite, from, from.Add(logtally.MaxPoints*time.Minute), time.Minute); !errors.Is(err, logtally.ErrTooManyPoints) {
		t.Errorf("Series of %d minutes = %v, want ErrTooManyPoints", logtally.MaxPoints+1, err)
	}
	if got, err := s.Series(ctx, logtally.DefaultSite, from, from.Add(-time.Minute), time.Minute); err != nil || len(got.Points) != 0 {
		t.Errorf("Series backwards = %+v, %v; want no points", got, err)
	}
	if got, err := s.Series(ctx, logtally.DefaultSite, from, from.Add(59*time.Minute), time.Minute); err != nil || len(got.Points) != 60 {
		t.Errorf("Series of an empty hour = %d points, %v; want 60 zero points", len(got.Points), err)
	}
	if _, err := s.Window(ctx, logtally.DefaultSite, from, time.Millisecond); err == nil {
		t.Error("Window of 1ms succeeded")
	}
}
