package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/tally"
)

// line is one log line as the truth sees it.
type line struct {
	node     int
	batch    int   // the batch's index among its node's
	t        int64 // unix second; for a rejected line, a second of the minute it counts in
	rejected bool
	status   int
	bytes    int64
	path     string
	visitor  uint64 // 0: not a page view
	live     bool   // inside the live window when it was read: shipped per second too
}

// workload is what several nodes read, as lines and as the batches they
// commit.
type workload struct {
	lines   []line
	batches [][]*tally.Batch // per node, in sequence order
}

// t0 is five minutes before midnight UTC, so that the lines span an hour
// and a day boundary, and the day boundary of zones half an hour off UTC.
var t0 = time.Date(2026, 11, 21, 23, 55, 0, 0, time.UTC).Unix()

// liveFrom is the first second shipped as live: the window of a node whose
// clock is at the newest line, t0+600.
const liveSpan = 600

// generate makes nodes' batches: lines at random seconds in [t0-1200,
// t0+600), visitors and paths drawn from pools shared by all nodes, some
// lines rejected.
func generate(rng *rand.Rand, nodes, batches, lines int) *workload {
	w := &workload{batches: make([][]*tally.Batch, nodes)}
	for n := range nodes {
		for bi := range batches {
			b := tally.NewBatch()
			var newest int64
			for range lines {
				sec := t0 - 1200 + rng.Int64N(1800)
				if rng.IntN(40) == 0 {
					b.Reject(sec)
					at := newest
					if at == 0 {
						at = sec
					}
					w.lines = append(w.lines, line{node: n, batch: bi, t: at, rejected: true})
					b.AddLines(1)
					continue
				}
				l := line{node: n, batch: bi, t: sec, status: []int{200, 200, 200, 301, 404, 503, 0}[rng.IntN(7)],
					bytes: rng.Int64N(10_000), path: fmt.Sprintf("/page/%d", rng.IntN(30)), live: sec >= t0+600-liveSpan}
				if rng.IntN(4) > 0 {
					l.visitor = 1 + rng.Uint64N(60)*0x9e3779b97f4a7c15 // spread over all 64 bits
				}
				h := &logtally.Hit{Time: l.t, Visitor: l.visitor, Path: []byte(l.path), Bytes: l.bytes, Status: l.status,
					PageView: l.visitor != 0}
				b.Add(h, l.live)
				b.AddLines(1)
				newest = max(newest, sec)
				w.lines = append(w.lines, l)
			}
			w.batches[n] = append(w.batches[n], b)
		}
	}
	return w
}

// applyAll ships every node's batches, the nodes at the same time, each in
// order, each node through its own store.
func applyAll(t *testing.T, stores []*Store, w *workload) {
	t.Helper()
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make([]error, len(w.batches))
	for n, bs := range w.batches {
		wg.Go(func() {
			for i, b := range bs {
				applied, err := apply(ctx, stores[n], nodeName(n), uint64(i+1), b)
				if err == nil && !applied {
					err = fmt.Errorf("batch %d not applied", i+1)
				}
				if err != nil {
					errs[n] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func nodeName(n int) string { return fmt.Sprintf("node-%d", n) }

// wantSeries counts the lines into the points a series from..to by step
// has, by brute force.
func wantSeries(lines []line, from, to time.Time, step time.Duration, loc *time.Location) logtally.Series {
	var starts []time.Time
	if step == 24*time.Hour {
		y, m, d := from.In(loc).Date()
		for t := time.Date(y, m, d, 0, 0, 0, 0, loc); !t.After(to); t = t.AddDate(0, 0, 1) {
			starts = append(starts, t)
		}
	} else {
		for t := from.Truncate(step); !t.After(to); t = t.Add(step) {
			starts = append(starts, t)
		}
	}
	out := logtally.Series{Step: step, Points: make([]logtally.Point, len(starts))}
	visitors := make([]map[uint64]bool, len(starts))
	for i, s := range starts {
		out.Points[i].Time = s.UTC()
		visitors[i] = map[uint64]bool{}
	}
	for _, l := range lines {
		if l.rejected {
			continue
		}
		t := time.Unix(l.t, 0)
		i := len(starts) - 1
		for i >= 0 && starts[i].After(t) {
			i--
		}
		end := to
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		if i < 0 || step != 24*time.Hour && t.Sub(starts[i]) >= step || t.After(end) {
			continue
		}
		out.Points[i].Requests++
		if l.visitor != 0 {
			out.Points[i].PageViews++
			visitors[i][l.visitor] = true
		}
	}
	for i := range starts {
		out.Points[i].Visitors = int64(len(visitors[i]))
	}
	return out
}

// wantWindow is the live window (end-length, end] by brute force, over
// the lines shipped per second. Visitors are those whose latest live page
// view falls in the window (see Store.Window).
func wantWindow(lines []line, end int64, length int64) logtally.Snapshot {
	snap := logtally.Snapshot{From: time.Unix(end-length+1, 0).UTC(), To: time.Unix(end+1, 0).UTC(),
		Length: time.Duration(length) * time.Second}
	last := map[uint64]int64{}
	views := map[string]int64{}
	for _, l := range lines {
		if !l.live || l.rejected {
			continue
		}
		if l.visitor != 0 {
			last[l.visitor] = max(last[l.visitor], l.t)
		}
		if l.t <= end-length || l.t > end {
			continue
		}
		snap.Requests++
		if l.visitor != 0 {
			snap.PageViews++
			views[l.path]++
		}
	}
	for _, t := range last {
		if t > end-length && t <= end {
			snap.Visitors++
		}
	}
	for p, n := range views {
		snap.Pages = append(snap.Pages, logtally.PageCount{Path: p, PageViews: n})
	}
	slices.SortFunc(snap.Pages, func(a, b logtally.PageCount) int {
		return cmp.Or(cmp.Compare(b.PageViews, a.PageViews), cmp.Compare(a.Path, b.Path))
	})
	if len(snap.Pages) > logtally.MaxPages {
		snap.Pages = snap.Pages[:logtally.MaxPages]
	}
	return snap
}

func equalSnapshots(a, b logtally.Snapshot) bool {
	return a.From.Equal(b.From) && a.To.Equal(b.To) && a.Length == b.Length && a.Requests == b.Requests &&
		a.PageViews == b.PageViews && a.Visitors == b.Visitors && a.Approximate == b.Approximate &&
		a.Rejected == b.Rejected && slices.Equal(a.Pages, b.Pages)
}

func equalSeries(a, b logtally.Series) bool {
	return a.Step == b.Step && a.Approximate == b.Approximate &&
		slices.EqualFunc(a.Points, b.Points, func(x, y logtally.Point) bool {
			return x.Time.Equal(y.Time) && x.Requests == y.Requests && x.PageViews == y.PageViews && x.Visitors == y.Visitors
		})
}

// minuteDetail is what a minute row holds beyond a series point.
type minuteDetail struct {
	Bytes, Rejected int64
	Status          [5]int64
}

func wantMinuteDetails(lines []line) map[int64]minuteDetail {
	out := map[int64]minuteDetail{}
	for _, l := range lines {
		m := logtally.FloorDiv(l.t, 60) * 60
		d := out[m]
		if l.rejected {
			d.Rejected++
		} else {
			d.Bytes += l.bytes
			if l.status >= 100 && l.status < 600 {
				d.Status[l.status/100-1]++
			}
		}
		out[m] = d
	}
	return out
}

func storedMinuteDetails(t *testing.T, s *Store) map[int64]minuteDetail {
	t.Helper()
	ctx := testContext(t)
	rows, err := s.pool.Query(ctx, `SELECT extract(epoch FROM minute)::int8, sum(bytes)::int8, sum(rejected)::int8,
		sum(status_1xx)::int8, sum(status_2xx)::int8, sum(status_3xx)::int8, sum(status_4xx)::int8, sum(status_5xx)::int8
		FROM logtally.minutes WHERE site = 'default' GROUP BY minute`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]minuteDetail{}
	for rows.Next() {
		var m int64
		var d minuteDetail
		if err := rows.Scan(&m, &d.Bytes, &d.Rejected, &d.Status[0], &d.Status[1], &d.Status[2], &d.Status[3], &d.Status[4]); err != nil {
			t.Fatal(err)
		}
		out[m] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantPathCounts(lines []line, paths []string, day time.Time, loc *time.Location) []logtally.PathCount {
	out := make([]logtally.PathCount, len(paths))
	y, m, d := day.In(loc).Date()
	for i, p := range paths {
		out[i].Path = p
		for _, l := range lines {
			if l.rejected || l.visitor == 0 || l.path != p {
				continue
			}
			out[i].Total++
			if ly, lm, ld := time.Unix(l.t, 0).In(loc).Date(); ly == y && lm == m && ld == d {
				out[i].Day++
			}
		}
	}
	return out
}

// checkAgainstTruth compares every read of s with a brute-force count of
// the lines.
func checkAgainstTruth(t *testing.T, s *Store, lines []line) {
	t.Helper()
	ctx := testContext(t)
	from, to := time.Unix(t0-1300, 0), time.Unix(t0+700, 0)
	for _, step := range []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour} {
		got, err := s.Series(ctx, logtally.DefaultSite, from, to, step)
		if err != nil {
			t.Fatalf("Series %s: %v", step, err)
		}
		if want := wantSeries(lines, from, to, step, s.Location()); !equalSeries(got, want) {
			t.Errorf("Series %s =\n%+v\nwant\n%+v", step, got, want)
		}
	}
	if got, want := storedMinuteDetails(t, s), wantMinuteDetails(lines); !maps.Equal(got, want) {
		t.Errorf("minute details = %+v\nwant %+v", got, want)
	}
	for _, end := range []int64{t0 + 599, t0 + 333, t0 + 10, t0 + 1000} {
		for _, length := range []int64{1, 59, 60, 61, 150, liveSpan} {
			got, err := s.Window(ctx, logtally.DefaultSite, time.Unix(end, 0), time.Duration(length)*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantWindow(lines, end, length); !equalSnapshots(got, want) {
				t.Errorf("Window(%d, %ds) =\n%+v\nwant\n%+v", end-t0, length, got, want)
			}
		}
	}
	var paths []string
	for i := range 31 {
		paths = append(paths, fmt.Sprintf("/page/%d", i)) // /page/30 is never viewed
	}
	for _, day := range []int64{t0, t0 + 600, t0 - 86400} {
		got, err := s.PathCounts(ctx, logtally.DefaultSite, paths, time.Unix(day, 0))
		if err != nil {
			t.Fatal(err)
		}
		if want := wantPathCounts(lines, paths, time.Unix(day, 0), s.Location()); !slices.Equal(got, want) {
			t.Errorf("PathCounts on %s =\n%v\nwant\n%v", time.Unix(day, 0).In(s.Location()), got, want)
		}
	}
}

// TestApplyMatchesBruteForce ships random batches from three nodes at once,
// with visitors shared between nodes, and compares every read with a
// brute-force count: a visitor seen by several nodes counts once in a
// minute, an hour, a day and the live window.
func TestApplyMatchesBruteForce(t *testing.T) {
	t.Parallel()
	for i, tz := range []string{"UTC", "Asia/Kolkata"} {
		t.Run(tz, func(t *testing.T) {
			t.Parallel()
			url := pgtest.Database(t)
			w := generate(rand.New(rand.NewPCG(uint64(i), 7)), 3, 6, 400)
			stores := make([]*Store, 3)
			for n := range stores {
				cfg := DefaultConfig()
				cfg.Verifier = testVerifier
				cfg.URL, cfg.Node, cfg.TZ = url, nodeName(n), tz
				s, err := Open(testContext(t), cfg, discard())
				if err != nil {
					t.Fatal(err)
				}
				s.Now = func() time.Time { return time.Unix(t0+3600, 0) }
				defer s.Close()
				stores[n] = s
			}
			applyAll(t, stores, w)
			checkAgainstTruth(t, stores[0], w.lines)

			// Each node's own share is readable too: its rows sum to its lines.
			rows, err := stores[0].pool.Query(testContext(t),
				"SELECT node, sum(requests)::int8 + sum(rejected)::int8 FROM logtally.minutes GROUP BY node")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for rows.Next() {
				var node string
				var n int64
				rows.Scan(&node, &n)
				got[node] = n
			}
			want := map[string]int64{}
			for _, l := range w.lines {
				want[nodeName(l.node)]++
			}
			if !maps.Equal(got, want) {
				t.Errorf("lines per node = %v, want %v", got, want)
			}
		})
	}
}

// TestApplyDuplicateAndGap checks the cursor: a batch at or below it is
// acknowledged and changes nothing, one beyond the next is ErrGap and
// changes nothing, and each node has its own cursor.
func TestApplyDuplicateAndGap(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := open(t, pgtest.Database(t), "a", time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(1, 1)), 2, 3, 50)
	for i, b := range w.batches[0][:2] {
		if applied, err := apply(ctx, s, "a", uint64(i+1), b); !applied || err != nil {
			t.Fatalf("Apply a/%d = %v, %v", i+1, applied, err)
		}
	}
	before := snapshotTables(t, s)
	for _, seq := range []uint64{1, 2} {
		if applied, err := apply(ctx, s, "a", seq, w.batches[0][seq-1]); applied || err != nil {
			t.Errorf("Apply a/%d again = %v, %v; want false, nil", seq, applied, err)
		}
	}
	if _, err := apply(ctx, s, "a", 4, w.batches[0][2]); !errors.Is(err, ErrGap) {
		t.Errorf("Apply a/4 after 2 = %v, want ErrGap", err)
	}
	if _, err := apply(ctx, s, "b", 2, w.batches[1][1]); !errors.Is(err, ErrGap) {
		t.Errorf("Apply b/2 first = %v, want ErrGap", err)
	}
	if _, err := apply(ctx, s, "a", 0, w.batches[0][2]); err == nil || errors.Is(err, ErrGap) {
		t.Errorf("Apply a/0 = %v, want an argument error", err)
	}
	if after := snapshotTables(t, s); !maps.Equal(after, before) {
		t.Errorf("duplicates and gaps changed the tables: %v, before %v", after, before)
	}
	if last, err := s.LastSeq(ctx, "a"); last != 2 || err != nil {
		t.Errorf("LastSeq a = %d, %v; want 2", last, err)
	}
	if last, err := s.LastSeq(ctx, "b"); last != 0 || err != nil {
		t.Errorf("LastSeq b = %d, %v; want 0", last, err)
	}
	if applied, err := apply(ctx, s, "a", 3, w.batches[0][2]); !applied || err != nil {
		t.Errorf("Apply a/3 = %v, %v", applied, err)
	}
	if applied, err := apply(ctx, s, "b", 1, w.batches[1][0]); !applied || err != nil {
		t.Errorf("Apply b/1 = %v, %v", applied, err)
	}
	// Node a shipped its three batches, node b its first.
	checkAgainstTruth(t, s, linesOf(w, map[int]int{0: 3, 1: 1}))
}

// linesOf returns the lines of the first n[node] batches of each node.
func linesOf(w *workload, n map[int]int) []line {
	var out []line
	for _, l := range w.lines {
		if l.batch < n[l.node] {
			out = append(out, l)
		}
	}
	return out
}

// snapshotTables returns the row count and a checksum of every table.
func snapshotTables(t *testing.T, s *Store) map[string]string {
	t.Helper()
	ctx := testContext(t)
	out := map[string]string{}
	for _, table := range []string{"cursors", "minutes", "hours", "days", "minute_visitors", "hour_visitors", "day_visitors",
		"seconds", "second_paths", "window_minute_paths", "visitors", "day_paths", "paths"} {
		var sum string
		err := s.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '')
			FROM logtally.%s t`, table)).Scan(&sum)
		if err != nil {
			t.Fatal(err)
		}
		out[table] = sum
	}
	return out
}

// TestApplyDecodedBatches ships batches the way the outbox will: encoded
// when committed locally, decoded by the shipper. The fleet counts the same.
func TestApplyDecodedBatches(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Database(t), "a", time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(81, 82)), 2, 3, 400)
	for n, bs := range w.batches {
		for i, b := range bs {
			enc, err := b.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var shipped tally.Batch
			if err := shipped.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			w.batches[n][i] = &shipped
		}
	}
	applySerial(t, s, w)
	checkAgainstTruth(t, s, w.lines)
}
