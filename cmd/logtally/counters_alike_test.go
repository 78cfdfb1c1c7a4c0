package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/storage"
)

// TestCountersAlikeAcrossRestart: counters declared apart that count the
// same lines (a log of GETs alone) are stored once, and across a restart
// each one's live window and history are what one run shows; once a
// POST sets one apart, it keeps what it counted and counts on its own.
func TestCountersAlikeAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	lines := func(from, n int, method string) []string {
		var out []string
		for i := from; i < from+n; i++ {
			out = append(out, line(fmt.Sprintf("192.0.2.%d", i%30), clk.At(-time.Duration(200-i)*time.Second),
				fmt.Sprintf("%s /v/%d HTTP/1.1", method, i%5), 200, browser))
		}
		return out
	}
	counters := []string{"--counter", "gets=GET /v/{id}", "--counter", "all=* /v/{id}", "--counter", "heads=GET,HEAD /v/{id}"}
	args := func(db string) []string {
		return append(append([]string{"run", "--db", db, "--admin-listen", "127.0.0.1:0"}, counters...), log)
	}
	db := filepath.Join(dir, "db")
	appendLines(t, log, lines(0, 60, "GET")...)
	m := start(t, clk.Now, args(db)...)
	poll.Until(t, "the first lines committed", func() bool { return m.pipeline().Lines() == 60 && m.pipeline().Commits() > 0 })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := shares(t, db); got["all"] != "gets" || got["heads"] != "gets" {
		t.Errorf("after GETs alone, shares = %v, want all and heads reading gets's history", got)
	}

	appendLines(t, log, lines(60, 40, "GET")...)
	appendLines(t, log, lines(100, 20, "POST")...)
	m = start(t, clk.Now, args(db)...)
	whole := start(t, clk.Now, args(filepath.Join(dir, "db2"))...)
	for d, lines := range map[*Main]int64{m: 60, whole: 120} {
		poll.Until(t, "every line committed", func() bool {
			return d.pipeline().Lines() == lines && d.pipeline().Commits() > 0 && stats(t, d).Requests == 120
		})
	}
	for _, name := range []string{"gets", "all", "heads"} {
		for _, path := range []string{"/api/v1/counters/" + name + "/top?limit=10",
			"/api/v1/counters/" + name + "?key=1&key=3", "/api/v1/series?counter=" + name} {
			poll.Until(t, "a counter's window to be published", func() bool {
				_, got := get(t, m, path)
				_, want := get(t, whole, path)
				return got == want
			})
		}
	}
	_, top := get(t, m, "/api/v1/counters/all/top?limit=10")
	_, gets := get(t, m, "/api/v1/counters/gets/top?limit=10")
	if top == gets {
		t.Errorf("all counts the POSTs and gets does not, yet they answer alike: %s", top)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := shares(t, db); got["all"] != "all" || got["heads"] != "gets" {
		t.Errorf("after the POSTs, shares = %v, want all on its own and heads still reading gets's", got)
	}
}

// shares returns which counter's history each counter of the file reads.
func shares(t *testing.T, db string) map[string]string {
	t.Helper()
	s, err := storage.Open(storage.Config{Path: db}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]string{}
	for _, site := range s.Sites() {
		if logtally.IsCounterSite(site) {
			out[site[len(logtally.CounterSite("")):]] = s.Shares(site)[len(logtally.CounterSite("")):]
		}
	}
	return out
}
