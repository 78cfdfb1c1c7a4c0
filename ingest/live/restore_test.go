package live

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// runLines runs a live loop over cs into store, on the clock now, with a
// window of wcfg ending at now, and returns the window.
func runLines(t *testing.T, store ingest.Committer, wcfg window.Config, now time.Time, cs ...tailer.Chunk) *window.Window {
	t.Helper()
	format, classifier := ingesttest.Combined(t)
	w := window.New(wcfg, now)
	core := ingest.Deps{Format: format, Classifier: classifier, Now: func() time.Time { return now }}
	run(t, mustNew(t, Config{}, Deps{Deps: core, Window: w, Store: store}), cs...)
	return w
}

// snapshotText is a snapshot's counts and pages, to compare two windows.
func snapshotText(s *logtally.Snapshot) string {
	return fmt.Sprintf("%s..%s requests=%d pageviews=%d visitors=%d approximate=%t pages=%v",
		s.From, s.To, s.Requests, s.PageViews, s.Visitors, s.Approximate, s.Pages)
}

// TestRestoreFromCheckpoint: a window restored from what a live run's
// commits checkpointed shows what the live window showed, and slides the
// same way afterwards.
func TestRestoreFromCheckpoint(t *testing.T) {
	store := ingesttest.Store(t)
	now := t0.Add(5 * time.Minute)
	wcfg := window.Config{Length: 10 * time.Minute}
	live := runLines(t, store, wcfg, now, ingesttest.Chunk(0, 0, 250))

	restored, err := Restore(store, wcfg, AnchorClock, now)
	if err != nil {
		t.Fatal(err)
	}
	got, want := snapshotText(restored.Current()), snapshotText(live.Current())
	if got != want || live.Current().Requests != 250 {
		t.Errorf("restored window:\n%s\nlive window:\n%s", got, want)
	}

	// Seven minutes on, the lines of seconds 0 to 120 have left both.
	for _, w := range []*window.Window{live, restored} {
		w.Advance(now.Add(7 * time.Minute))
		w.Publish()
	}
	got, want = snapshotText(restored.Current()), snapshotText(live.Current())
	if got != want || live.Current().Requests != 250-121 {
		t.Errorf("after sliding, restored window:\n%s\nlive window:\n%s", got, want)
	}
}

// TestRestoreFromMinutes: a replay keeps no per-second state, so the
// window is refilled from the stored minutes; anchored at the log, it ends
// with the newest stored minute.
func TestRestoreFromMinutes(t *testing.T) {
	store := ingesttest.Store(t)
	wcfg := window.Config{Length: 10 * time.Minute}
	replayLines(t, store, ingesttest.Chunk(0, 0, 250)) // t0 .. t0+249s

	w, err := Restore(store, wcfg, AnchorLog, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := w.Current()
	if want := t0.Add(5 * time.Minute); !s.To.Equal(want) {
		t.Errorf("window ends at %s, want %s: just after the newest stored minute", s.To, want)
	}
	// chunk gives 20 visitors and 3 paths, one page view a line.
	if s.Requests != 250 || s.PageViews != 250 || s.Visitors != 20 || len(s.Pages) != 3 || s.Approximate {
		t.Errorf("restored window: %s; want 250 requests and page views, 20 visitors, 3 pages", snapshotText(s))
	}
}

// TestRestoreMixed: where a live run's checkpoint starts after minutes that
// only a replay wrote, the older part comes from the minutes and the rest
// exactly from the seconds, and nothing is counted twice.
func TestRestoreMixed(t *testing.T) {
	store := ingesttest.Store(t)
	wcfg := window.Config{Length: 10 * time.Minute}
	replayed := ingesttest.Chunk(0, 0, 120) // t0 .. t0+119s
	replayLines(t, store, replayed)
	now := t0.Add(5 * time.Minute)
	live := ingesttest.Chunk(replayed.Offset, 180, 60) // t0+180s .. t0+239s
	runLines(t, store, wcfg, now, live)

	w, err := Restore(store, wcfg, AnchorClock, now)
	if err != nil {
		t.Fatal(err)
	}
	if s := w.Current(); s.Requests != 180 || s.PageViews != 180 || s.Visitors != 20 {
		t.Errorf("restored window: %s; want 180 requests and page views, 20 visitors", snapshotText(s))
	}
}

func TestRestoreEmpty(t *testing.T) {
	store := ingesttest.Store(t)
	w, err := Restore(store, window.DefaultConfig(), AnchorLog, t0)
	if err != nil {
		t.Fatal(err)
	}
	if s := w.Current(); s.Requests != 0 || !s.To.Equal(t0.Add(time.Second)) {
		t.Errorf("empty store, anchored at the log: window %s, want an empty one ending now", snapshotText(s))
	}
	w, err = Restore(store, window.DefaultConfig(), AnchorClock, t0)
	if err != nil {
		t.Fatal(err)
	}
	if s := w.Current(); s.Requests != 0 || !s.To.Equal(t0.Add(time.Second)) {
		t.Errorf("empty store, on the clock: window %s, want an empty one ending now", snapshotText(s))
	}
}

// TestLogAnchoredFollowsClockUntilFirstLine: with the window at the newest
// line and nothing stored, the window is the clock's (not one ending in
// 1970) until the first line, which moves it to the line's time, with the
// lines rejected before it still counted.
func TestLogAnchoredFollowsClockUntilFirstLine(t *testing.T) {
	store := ingesttest.Store(t)
	format, classifier := ingesttest.Combined(t)
	var now atomic.Int64
	now.Store(t0.Add(6 * 24 * time.Hour).Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	wcfg := window.Config{Length: 10 * time.Minute}
	w, err := Restore(store, wcfg, AnchorLog, clock())
	if err != nil {
		t.Fatal(err)
	}
	l := mustNew(t, Config{Anchor: AnchorLog}, Deps{Deps: ingest.Deps{Format: format, Classifier: classifier, Now: clock},
		Store: store, Window: w})
	check := func(when string, to time.Time, requests, rejected int64) {
		t.Helper()
		s := l.Snapshot()
		if !s.To.Equal(to) || s.Requests != requests || s.Rejected != rejected {
			t.Errorf("%s: window %s rejected=%d, want one to %s with %d requests and %d rejected",
				when, snapshotText(s), s.Rejected, to.UTC(), requests, rejected)
		}
	}
	check("at start", clock().Add(time.Second), 0, 0)
	now.Add(60)
	l.publish()
	check("a minute later", clock().Add(time.Second), 0, 0)
	c := ingesttest.Chunk(0, 0, 60)
	c.Data = append([]byte("not a line\n"), c.Data...)
	c.Offset += int64(len("not a line\n"))
	run(t, l, c)
	check("after the first lines", t0.Add(60*time.Second), 60, 1)
}

// TestRestoreCurrentMinute: lines a replay stored in the minute that is not
// over yet are in the window that run restores on the clock. Their minute
// ends after now, so they count at the window's last second.
func TestRestoreCurrentMinute(t *testing.T) {
	store := ingesttest.Store(t)
	wcfg := window.Config{Length: 10 * time.Minute}
	replayLines(t, store, ingesttest.Chunk(0, 0, 30)) // t0 .. t0+29s
	now := t0.Add(40 * time.Second)

	w, err := Restore(store, wcfg, AnchorClock, now)
	if err != nil {
		t.Fatal(err)
	}
	if s := w.Current(); s.Requests != 30 || s.PageViews != 30 || s.Visitors != 20 {
		t.Errorf("restored window: %s; want the 30 lines of the current minute", snapshotText(s))
	}
}

// otherClients is c with its lines' clients moved to another network, so
// that they are other visitors than the ones chunk makes, in a file of its own.
func otherClients(c tailer.Chunk) tailer.Chunk {
	c.File = "g"
	c.Data = bytes.ReplaceAll(c.Data, []byte("192.0.2."), []byte("198.51.100."))
	return c
}

// storedTotals adds up the stored minutes in [from, to): requests, page
// views, rejected lines, page views per path, and the distinct visitors.
func storedTotals(t *testing.T, store *storage.Store, from, to time.Time) (requests, pageviews, rejected, visitors int64, paths map[string]int64) {
	t.Helper()
	minutes, err := store.Minutes(from, to.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	paths = make(map[string]int64)
	seen := make(map[uint64]bool)
	for _, m := range minutes {
		requests += m.Requests
		pageviews += m.PageViews
		rejected += m.Rejected
		for _, p := range m.Top {
			paths[p.Path] += p.PageViews
		}
		set, ok, err := store.MinuteVisitors(m.Time)
		if err != nil || !ok {
			t.Fatalf("visitors of minute %s: ok=%t err=%v", m.Time, ok, err)
		}
		for _, v := range set {
			seen[v] = true
		}
	}
	return requests, pageviews, rejected, int64(len(seen)), paths
}

// TestRestoreAfterReplayOfSameMinutes: run, stop, a replay that adds lines
// to minutes the run checkpointed, run again. The restored window holds what
// the stored minutes hold, not only what the run checkpointed per second.
func TestRestoreAfterReplayOfSameMinutes(t *testing.T) {
	store := ingesttest.Store(t)
	wcfg := window.Config{Length: 10 * time.Minute}
	now := t0.Add(5 * time.Minute)
	runLines(t, store, wcfg, now, ingesttest.Chunk(0, 0, 100))       // t0 .. t0+99s
	replayLines(t, store, otherClients(ingesttest.Chunk(0, 30, 50))) // t0+30s .. t0+79s

	w, err := Restore(store, wcfg, AnchorClock, now)
	if err != nil {
		t.Fatal(err)
	}
	s := w.Current()
	requests, pageviews, _, visitors, paths := storedTotals(t, store, s.From, s.To)
	if requests != 150 || visitors != 40 {
		t.Fatalf("stored minutes hold %d requests, %d visitors; want 150 and 40", requests, visitors)
	}
	if s.Requests != requests || s.PageViews != pageviews || s.Visitors != visitors || s.Approximate {
		t.Errorf("restored window: %s; want the stored minutes' %d requests, %d page views, %d visitors",
			snapshotText(s), requests, pageviews, visitors)
	}
	for p, want := range paths {
		if got, _ := s.PathViews(p); got != want {
			t.Errorf("restored window: %s has %d page views, want the stored %d", p, got, want)
		}
	}
}

// TestRestorePrunedFirstMinute: a run checkpoints only the seconds of its
// window, so the first minute of a window restored soon after is partly
// checkpointed: it is restored from the seconds, exactly, and not topped up
// from the stored minute with lines from before the window.
func TestRestorePrunedFirstMinute(t *testing.T) {
	store := ingesttest.Store(t)
	wcfg := window.Config{Length: 10 * time.Minute}
	now := t0.Add(930 * time.Second) // the window starts at t0+331s
	live := runLines(t, store, wcfg, now, ingesttest.Chunk(0, 0, 930))

	later := now.Add(10 * time.Second)
	restored, err := Restore(store, wcfg, AnchorClock, later)
	if err != nil {
		t.Fatal(err)
	}
	live.Advance(later)
	live.Publish()
	if got, want := snapshotText(restored.Current()), snapshotText(live.Current()); got != want {
		t.Errorf("restored window:\n%s\nlive window:\n%s", got, want)
	}
}

// TestRestoreRejected: the lines rejected in the window's minutes are
// counted in the restored window, from the live run's minutes as from a
// replay's.
func TestRestoreRejected(t *testing.T) {
	store := ingesttest.Store(t)
	wcfg := window.Config{Length: 10 * time.Minute}
	now := t0.Add(5 * time.Minute)
	bad := func(c tailer.Chunk, n int) tailer.Chunk {
		c.Data = append(c.Data, bytes.Repeat([]byte("not a log line\n"), n)...)
		c.Offset += int64(n * len("not a log line\n"))
		return c
	}
	runLines(t, store, wcfg, now, bad(ingesttest.Chunk(0, 0, 100), 3))
	replayLines(t, store, bad(otherClients(ingesttest.Chunk(0, 130, 10)), 2))

	w, err := Restore(store, wcfg, AnchorClock, now)
	if err != nil {
		t.Fatal(err)
	}
	s := w.Current()
	_, _, rejected, _, _ := storedTotals(t, store, s.From, s.To)
	if rejected != 5 {
		t.Fatalf("stored minutes hold %d rejected lines, want 5", rejected)
	}
	if s.Rejected != rejected {
		t.Errorf("restored window: %d rejected, want the stored %d", s.Rejected, rejected)
	}
}
