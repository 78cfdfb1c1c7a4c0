package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
)

// counts is what a step of history should hold, counted from the log.
type counts struct {
	requests, pageviews, bytes int64
	status                     [5]int64
	visitors                   map[uint64]bool
}

// recountSteps counts the lines of a combined log by the start of their step
// (days in UTC), as logtally's rules classify them.
func recountSteps(t *testing.T, path string, step time.Duration) map[int64]*counts {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	format, err := parser.New("combined")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := classify.New(classify.DefaultConfig(), classify.Fixed{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int64]*counts)
	sc := bufio.NewScanner(f)
	var rec parser.Record
	for sc.Scan() {
		if err := format.Parse(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		h := rules.Classify(&rec)
		at := time.Unix(h.Time, 0).UTC().Truncate(step).Unix()
		c := out[at]
		if c == nil {
			c = &counts{visitors: make(map[uint64]bool)}
			out[at] = c
		}
		c.requests++
		c.bytes += h.Bytes
		c.status[h.Status/100-1]++
		if h.PageView {
			c.pageviews++
			c.visitors[h.Visitor] = true
		}
	}
	return out
}

// series asks a daemon for a series and decodes it.
func series(t *testing.T, m *Main, query string) api.SeriesBody {
	t.Helper()
	status, body := get(t, m, "/api/v1/series?"+query)
	if status != 200 {
		t.Fatalf("series?%s: %d %s", query, status, body)
	}
	var s api.SeriesBody
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplay2015AnswersSeriesExactly: a log from 2015 replayed with the
// default flags keeps its minutes, hours and days, and run answers every
// step of them as a recount of the log does: requests, page views, status
// classes and bytes exactly, visitors exactly by minute and within the
// sketches' error by hour and day.
func TestReplay2015AnswersSeriesExactly(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	summary := replayLogs(t, "--db", db, "--tz", "UTC", archive)
	if !strings.Contains(summary, "kept: 1000 lines in minutes, hours and days") {
		t.Errorf("replay summary %q: want every line kept in minutes, hours and days", summary)
	}
	m := start(t, time.Now, "run", "--db", db, "--admin-listen", "127.0.0.1:0", "--tz", "UTC")
	for _, step := range []struct {
		name string
		d    time.Duration
	}{{"1m", time.Minute}, {"1h", time.Hour}, {"1d", 24 * time.Hour}} {
		want := recountSteps(t, archive, step.d)
		got := series(t, m, "from=2015-05-17&to=2015-05-20&step="+step.name)
		if len(got.Points) != int(4*24*time.Hour/step.d) {
			t.Fatalf("%s: %d points", step.name, len(got.Points))
		}
		steps := 0
		for _, p := range got.Points {
			w := want[p.T.Unix()]
			if w == nil {
				w = &counts{}
			} else {
				steps++
			}
			st := [5]int64{p.Status.C1, p.Status.C2, p.Status.C3, p.Status.C4, p.Status.C5}
			if !p.Held || p.Requests != w.requests || p.PageViews != w.pageviews || p.Bytes != w.bytes || st != w.status {
				t.Errorf("%s %s: %+v\nwant %+v", step.name, p.T, p, *w)
			}
			if v, exact := p.Visitors, int64(len(w.visitors)); v != exact && (step.d == time.Minute || v < exact*98/100 || v > exact*102/100+1) {
				t.Errorf("%s %s: %d visitors, want %d", step.name, p.T, v, exact)
			}
		}
		if steps != len(want) {
			t.Errorf("%s: the log has %d steps with lines, the series %d", step.name, len(want), steps)
		}
	}
}

// TestPointsBeforeKeptFrom: a step before the kept minutes is null, not
// zero; one after, with no line, is zero.
func TestPointsBeforeKeptFrom(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	replayLogs(t, "--db", db, "--tz", "UTC", archive)
	m := start(t, time.Now, "run", "--db", db, "--admin-listen", "127.0.0.1:0", "--tz", "UTC")
	s := series(t, m, "from=2015-05-06T02:50:00Z&to=2015-05-06T02:59:00Z&step=1m")
	kept := time.Date(2015, 5, 6, 2, 55, 0, 0, time.UTC) // 14 days before the newest line's minute
	if !s.KeptFrom.Equal(kept) {
		t.Fatalf("kept_from %s, want %s", s.KeptFrom, kept)
	}
	for _, p := range s.Points {
		if held := !p.T.Before(kept); p.Held != held || p.Requests != 0 {
			t.Errorf("%s: held %t, requests %d; want held %t, 0", p.T, p.Held, p.Requests, held)
		}
	}
	if _, body := get(t, m, "/api/v1/series?from=2015-05-06T02:53:00Z&to=2015-05-06T02:55:00Z&step=1m"); !strings.Contains(body,
		`{"t":"2015-05-06T02:54:00Z","requests":null,"pageviews":null,"visitors":null,"status":null,"bytes":null},{"t":"2015-05-06T02:55:00Z","requests":0,`) {
		t.Errorf("series around kept_from: %s", body)
	}
}

// syncBuffer is a buffer that the daemon's goroutines log to and the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startLogged is start, with the log kept.
func startLogged(t *testing.T, args ...string) (*Main, *syncBuffer) {
	t.Helper()
	m := NewMain()
	log := &syncBuffer{}
	m.Stderr = log
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, log
}

// TestShorterRetentionIsHeldUnlessApplied: a start with a shorter
// --keep-minutes than the stored one deletes nothing and logs what it
// would delete and how to apply it; with --apply-retention the pruner
// deletes, and logs what it deleted.
func TestShorterRetentionIsHeldUnlessApplied(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	replayLogs(t, "--db", db, "--tz", "UTC", archive)
	minutes := func() int {
		s, err := storage.OpenReadOnly(storage.Config{Path: db}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		all, err := s.Minutes(time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	before := minutes()

	m, log := startLogged(t, "run", "--db", db, "--admin-listen", "127.0.0.1:0", "--tz", "UTC", "--keep-minutes", "1d")
	if pruned, err := m.run().store.Prune(context.Background()); err != nil || len(pruned) != 0 {
		t.Errorf("held retention pruned %+v, %v", pruned, err)
	}
	for _, want := range []string{`msg="retention kept longer than asked: the stored one is in force"`, "flag=--keep-minutes",
		"asked=1d", "in_force=14d", `would_delete="`, " minutes, 2015-05-17T00:00:00Z to 2015-05-19T02:", "--apply-retention"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	m.Close()
	if after := minutes(); after != before {
		t.Errorf("%d minutes after a start with a shorter span, want all %d", after, before)
	}

	m, log = startLogged(t, "run", "--db", db, "--admin-listen", "127.0.0.1:0", "--tz", "UTC", "--keep-minutes", "1d", "--apply-retention")
	poll.Until(t, "the pruner to log what it deleted", func() bool { return strings.Contains(log.String(), "pruned history past its retention") })
	m.Close()
	after := minutes()
	if after == before || after == 0 {
		t.Errorf("%d minutes after --apply-retention, had %d", after, before)
	}
	if want := fmt.Sprintf("what=minutes deleted=%d from=2015-05-17T00:00:00Z", before-after); !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log)
	}
}

// TestReplayThenRunShowsCurrentMinute: lines of the current minute that a
// replay stored are in the live window that run restores.
func TestReplayThenRunShowsCurrentMinute(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 40, 0, time.UTC))
	for i := range 30 {
		appendLines(t, log, line(fmt.Sprintf("192.0.2.%d", i), clk.At(-time.Duration(30-i)*time.Second), "GET / HTTP/1.1", 200, browser))
	}
	replayLogs(t, "--db", db, log)
	m := start(t, clk.Now, "run", "--db", db, "--admin-listen", "127.0.0.1:0")
	if s := stats(t, m); s.Requests != 30 || s.Visitors != 30 {
		t.Errorf("stats after replaying the current minute: %+v, want its 30 requests and visitors", s)
	}
}
