package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/storage"
)

// clock is an injected clock that tests move by hand.
type clock struct{ unix atomic.Int64 }

func newClock(t time.Time) *clock    { c := &clock{}; c.unix.Store(t.Unix()); return c }
func (c *clock) Now() time.Time      { return time.Unix(c.unix.Load(), 0).UTC() }
func (c *clock) Add(d time.Duration) { c.unix.Add(int64(d / time.Second)) }
func (c *clock) At(d time.Duration) string {
	return c.Now().Add(d).Format("02/Jan/2006:15:04:05 -0700")
}

// start runs a Main with args through the same path as main, and stops it at
// the end of the test.
func start(t *testing.T, now func() time.Time, args ...string) *Main {
	t.Helper()
	m := NewMain()
	m.Now = now
	m.Stdout, m.Stderr = io.Discard, io.Discard
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	m.run().Tailer.Poll = 5 * time.Millisecond
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func get(t *testing.T, m *Main, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}

type statsBody struct {
	From, To                      time.Time
	WindowSeconds                 int64 `json:"window_seconds"`
	Visitors, Pageviews, Requests int64
}

func stats(t *testing.T, m *Main) statsBody {
	t.Helper()
	_, body := get(t, m, "/api/v1/stats")
	var s statsBody
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("stats %s: %v", body, err)
	}
	return s
}

const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

func line(host, when, request string, status int, ua string) string {
	return fmt.Sprintf(`%s - - [%s] "%s" %d 512 "-" "%s"`, host, when, request, status, ua)
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendLines(t, log) // the file exists, empty, before the daemon starts
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	m := start(t, clk.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", log)

	appendLines(t, log,
		line("192.0.2.1", clk.At(-9*time.Minute-58*time.Second), "GET /old HTTP/1.1", 200, browser), // leaves after 3s
		line("192.0.2.1", clk.At(-5*time.Minute), "GET /a HTTP/1.1", 200, browser),
		line("192.0.2.1", clk.At(-4*time.Minute), "GET /b?x=1 HTTP/1.1", 200, browser),
		line("2001:db8::7", clk.At(-3*time.Minute), "GET /a HTTP/2.0", 304, browser),
		line("192.0.2.9", clk.At(-2*time.Minute), "GET /a HTTP/1.1", 200, "Googlebot/2.1"), // crawler
		line("192.0.2.9", clk.At(-2*time.Minute), "GET /app.js HTTP/1.1", 200, browser),    // asset
		line("192.0.2.9", clk.At(-1*time.Minute), "GET /nope HTTP/1.1", 404, browser),      // not found
		line("192.0.2.9", clk.At(-1*time.Minute), "POST /a HTTP/1.1", 200, browser),        // POST
		"garbage that is not a log line",                                                   // malformed
		line("192.0.2.5", clk.At(-11*time.Minute), "GET /a HTTP/1.1", 200, browser),        // before the window
		line("192.0.2.6", clk.At(5*time.Minute), "GET /a HTTP/1.1", 200, browser),          // past --max-skew
	)
	poll.Until(t, "11 lines read", func() bool { return m.pipeline().Lines() == 11 })
	poll.Until(t, "stats to show them", func() bool { return stats(t, m).Requests == 8 })

	status, body := get(t, m, "/api/v1/stats")
	want := `{"from":"2026-11-21T11:50:01Z","to":"2026-11-21T12:00:01Z","window_seconds":600,"visitors":2,"pageviews":4,"requests":8,"rejected":2}`
	if status != 200 || body != want {
		t.Errorf("stats = %d %s\nwant 200 %s", status, body, want)
	}
	status, body = get(t, m, "/api/v1/pages")
	want = `{"from":"2026-11-21T11:50:01Z","to":"2026-11-21T12:00:01Z","window_seconds":600,"pages":[{"path":"/a","pageviews":2},{"path":"/b","pageviews":1},{"path":"/old","pageviews":1}]}`
	if status != 200 || body != want {
		t.Errorf("pages = %d %s\nwant 200 %s", status, body, want)
	}

	clk.Add(3 * time.Second) // the /old line's second leaves the window
	poll.Until(t, "the window to slide", func() bool { return stats(t, m).Requests == 7 })
	status, body = get(t, m, "/api/v1/stats")
	want = `{"from":"2026-11-21T11:50:04Z","to":"2026-11-21T12:00:04Z","window_seconds":600,"visitors":2,"pageviews":3,"requests":7,"rejected":2}`
	if status != 200 || body != want {
		t.Errorf("stats after slide = %d %s\nwant 200 %s", status, body, want)
	}
	status, body = get(t, m, "/api/v1/pages?limit=1")
	want = `{"from":"2026-11-21T11:50:04Z","to":"2026-11-21T12:00:04Z","window_seconds":600,"pages":[{"path":"/a","pageviews":2}]}`
	if status != 200 || body != want {
		t.Errorf("pages after slide = %d %s\nwant 200 %s", status, body, want)
	}
	if status, _ := get(t, m, "/api/v1/pages?limit=0"); status != 400 {
		t.Errorf("limit=0: status %d, want 400", status)
	}
}

func TestRestartResumesExactly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	lines := func(from, n int) []string {
		var out []string
		for i := from; i < from+n; i++ {
			out = append(out, line(fmt.Sprintf("192.0.2.%d", i%50), clk.At(-time.Duration(i)*time.Second),
				fmt.Sprintf("GET /p%d HTTP/1.1", i%7), 200, browser))
		}
		return out
	}
	const n, more = 120, 80
	appendLines(t, log)
	args := []string{"run", "--db", db, "--admin-listen", "127.0.0.1:0", log}

	m := start(t, clk.Now, args...)
	appendLines(t, log, lines(0, n)...)
	poll.Until(t, "first lines read", func() bool { return m.pipeline().Lines() == n })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	appendLines(t, log, lines(n, more)...) // written while stopped
	m = start(t, clk.Now, args...)
	poll.Until(t, "the rest read", func() bool { return m.pipeline().Lines() == more })
	poll.Until(t, "stats to include both runs", func() bool { return stats(t, m).Requests == n+more })
	_, gotStats := get(t, m, "/api/v1/stats")
	_, gotPages := get(t, m, "/api/v1/pages")

	// An uninterrupted run over the same log must show the same window.
	whole := start(t, clk.Now, "run", "--db", filepath.Join(dir, "db2"), "--admin-listen", "127.0.0.1:0", log)
	poll.Until(t, "a single run to read everything", func() bool { return whole.pipeline().Lines() == n+more })
	poll.Until(t, "its stats", func() bool { return stats(t, whole).Requests == n+more })
	if _, want := get(t, whole, "/api/v1/stats"); gotStats != want {
		t.Errorf("stats after restart = %s\nuninterrupted run  = %s", gotStats, want)
	}
	if _, want := get(t, whole, "/api/v1/pages"); gotPages != want {
		t.Errorf("pages after restart = %s\nuninterrupted run  = %s", gotPages, want)
	}
	if s := stats(t, whole); s.Visitors != 50 || s.Pageviews != n+more {
		t.Errorf("stats = %+v, want 50 visitors and %d page views", s, n+more)
	}

	// The restored window slides second by second like the uninterrupted
	// one: 7m30s later only lines less than 150 s older than the start remain.
	clk.Add(7*time.Minute + 30*time.Second)
	for _, d := range []*Main{m, whole} {
		poll.Until(t, "the window to slide", func() bool { return stats(t, d).Requests == 150 })
	}
	_, a := get(t, m, "/api/v1/pages?limit=1000")
	_, b := get(t, whole, "/api/v1/pages?limit=1000")
	if a != b || stats(t, m) != stats(t, whole) {
		t.Errorf("after sliding, restarted and uninterrupted runs differ:\n%s\n%s", a, b)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	if got := storedRequests(t, db); got != n+more {
		t.Errorf("stored requests = %d, want %d", got, n+more)
	}
}

func storedRequests(t *testing.T, db string) int64 {
	t.Helper()
	s, err := storage.Open(storage.Config{Path: db}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	minutes, err := s.Minutes(time.Unix(0, 0), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, m := range minutes {
		total += m.Requests
	}
	return total
}

func TestReplayThenServe(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	sample := filepath.Join("..", "..", "testdata", "sample.log")
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	total := bytes.Count(data, []byte{'\n'})

	replay := func() string {
		m := NewMain()
		var out bytes.Buffer
		m.Stdout, m.Stderr = &out, io.Discard
		if err := m.ParseFlags([]string{"replay", "--db", db, sample}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	first := replay()
	var files, read, parsed, rejected int
	if _, err := fmt.Sscanf(first, "replay: %d files, %d lines read, %d parsed, %d rejected", &files, &read, &parsed, &rejected); err != nil {
		t.Fatalf("summary %q: %v", first, err)
	}
	if files != 1 || read != total || parsed+rejected != total || rejected == 0 {
		t.Errorf("first replay: %q; want all %d lines, some rejected", first, total)
	}
	if second := replay(); !strings.HasPrefix(second, "replay: 1 files, 0 lines read, 0 parsed, 0 rejected") {
		t.Errorf("second replay = %q, want nothing read", second)
	}
	if got := storedRequests(t, db); got != int64(parsed) {
		t.Errorf("stored requests = %d, want %d", got, parsed)
	}

	// run with no FILE serves what the replay stored; the sample spans ten
	// minutes, so a window ending at its newest line holds all of it.
	m := start(t, time.Now, "run", "--db", db, "--admin-listen", "127.0.0.1:0", "--window-end", "log")
	if s := stats(t, m); s.Requests != int64(parsed) || s.Visitors == 0 || s.Pageviews == 0 {
		t.Errorf("served stats = %+v, want %d requests and some visitors", s, parsed)
	}
}

// TestRunReplayRun: run, stop, replay another server's log of the same
// minutes, run again: the restarted window holds what the stored series
// holds over it, the replayed lines and their rejected one included.
func TestRunReplayRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, other, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "other.log"), filepath.Join(dir, "db")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	lines := func(network string, from, n int) []string {
		var out []string
		for i := from; i < from+n; i++ {
			out = append(out, line(fmt.Sprintf("%s.%d", network, i%20), clk.At(-time.Duration(i)*time.Second),
				fmt.Sprintf("GET /p%d HTTP/1.1", i%3), 200, browser))
		}
		return out
	}
	appendLines(t, log)
	args := []string{"run", "--db", db, "--admin-listen", "127.0.0.1:0", log}
	m := start(t, clk.Now, args...)
	appendLines(t, log, lines("192.0.2", 0, 100)...)
	poll.Until(t, "the run's lines read", func() bool { return m.pipeline().Lines() == 100 })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	appendLines(t, other, append(lines("198.51.100", 20, 50), "not a log line")...)
	if got := replayLogs(t, "--db", db, other); !strings.HasPrefix(got, "replay: 1 files, 51 lines read, 50 parsed, 1 rejected") {
		t.Fatalf("replay: %q, want 50 lines parsed and 1 rejected", got)
	}

	m = start(t, clk.Now, args...)
	_, body := get(t, m, "/api/v1/stats")
	var got struct {
		From, To                                time.Time
		Requests, Pageviews, Visitors, Rejected int64
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("stats %s: %v", body, err)
	}
	_, body = get(t, m, "/api/v1/series?step=1m&from="+got.From.Truncate(time.Minute).Format(time.RFC3339)+
		"&to="+got.To.Add(-time.Second).Format(time.RFC3339))
	var series struct {
		Points []struct{ Requests, Pageviews int64 }
	}
	if err := json.Unmarshal([]byte(body), &series); err != nil {
		t.Fatalf("series %s: %v", body, err)
	}
	var requests, pageviews int64
	for _, p := range series.Points {
		requests += p.Requests
		pageviews += p.Pageviews
	}
	if requests != 150 || got.Requests != requests || got.Pageviews != pageviews || got.Visitors != 40 || got.Rejected != 1 {
		t.Errorf("restarted window: %d requests, %d page views, %d visitors, %d rejected; "+
			"want the stored series' %d requests (150), %d page views, 40 visitors, 1 rejected",
			got.Requests, got.Pageviews, got.Visitors, got.Rejected, requests, pageviews)
	}
}

// run returns the run command m parsed.
func (m *Main) run() *runCmd { return m.cmd.(*runCmd) }

// pipeline returns the pipeline of the run or replay m runs.
func (m *Main) pipeline() *pipeline {
	switch c := m.cmd.(type) {
	case *runCmd:
		return c.pipeline
	case *replayCmd:
		return c.pipeline
	}
	return nil
}
