package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/internal/poll"
)

// counterTruth is what the counters must show, counted from the lines.
type counterTruth struct {
	lines         int64
	shows, clicks map[string]int64 // by item, in the window (every line is)
	// visitors holds each item's distinct clients, of shows and of
	// clicks, on each UTC day (--tz UTC): a visitor is an address within
	// one day, so a client seen before and after midnight is two.
	visitors [2]map[string]map[string]bool
	today    map[string][2]int64
	day      string // the UTC day of "today"
}

// counterLog writes a log of shows and clicks of 10,000 items over the
// last nine minutes: shows skewed to a few popular items, each item with a
// click-through rate of its own, and lines of neither counter between.
func counterLog(t *testing.T, path string) counterTruth {
	t.Helper()
	rng := rand.New(rand.NewPCG(20, 20))
	now := time.Now().UTC()
	start := now.Add(-9 * time.Minute)
	truth := counterTruth{lines: 120_000, shows: map[string]int64{}, clicks: map[string]int64{}, today: map[string][2]int64{},
		day: now.Format(time.DateOnly), visitors: [2]map[string]map[string]bool{{}, {}}}
	visit := func(col int, key, ip string) {
		if truth.visitors[col][key] == nil {
			truth.visitors[col][key] = map[string]bool{}
		}
		truth.visitors[col][key][ip] = true
	}
	ctr := make([]float64, 10_000)
	for i := range ctr {
		ctr[i] = rng.Float64() * 0.3
	}
	const lines = 120_000
	var data []byte
	// A second's time stamp and day, made once for its 200-odd lines.
	sec, stamp, today, day := int64(-1), []byte(nil), false, ""
	for i := range lines {
		when := start.Add(time.Duration(i) * 9 * time.Minute / lines)
		if s := when.Unix(); s != sec {
			sec, day = s, when.Format(time.DateOnly)
			today = day == truth.day
			stamp = when.AppendFormat(stamp[:0], "02/Jan/2006:15:04:05 -0700")
		}
		ip := "10." + strconv.Itoa(rng.IntN(4)) + "." + strconv.Itoa(rng.IntN(250)) + "." + strconv.Itoa(rng.IntN(250))
		client := day + " " + ip
		item := int(math.Pow(rng.Float64(), 3) * 10_000)
		key := strconv.Itoa(item)
		var req string
		switch {
		case rng.IntN(10) == 0:
			req = "/about"
		case rng.Float64() < ctr[item]:
			req = "/watch/" + key
			truth.clicks[key]++
			visit(1, key, client)
			if today {
				d := truth.today[key]
				d[1]++
				truth.today[key] = d
			}
		default:
			req = "/thumb/" + key + ".jpg"
			truth.shows[key]++
			visit(0, key, client)
			if today {
				d := truth.today[key]
				d[0]++
				truth.today[key] = d
			}
		}
		data = fmt.Appendf(data, "%s - - [%s] \"GET %s HTTP/1.1\" 200 512 \"-\" \"%s\"\n", ip, stamp, req, browser)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return truth
}

// checkCounters compares the daemon's top 20 by click-through rate (at
// least 100 shows) and every item's window and daily counts with the
// truth.
func checkCounters(t *testing.T, base string, truth counterTruth) {
	t.Helper()
	// A counter's window is published once a second: wait for it.
	var shows, clicks int64
	for _, n := range truth.shows {
		shows += n
	}
	for _, n := range truth.clicks {
		clicks += n
	}
	poll.Until(t, "the counters' windows", func() bool {
		var body struct {
			Counters []struct {
				Name   string
				Window struct{ Count int64 }
			}
		}
		if getURL(t, base+"/api/v1/counters", &body) != http.StatusOK || len(body.Counters) != 2 {
			return false
		}
		return body.Counters[0].Window.Count == shows && body.Counters[1].Window.Count == clicks
	})
	var items []counter.Item
	for key, shows := range truth.shows {
		items = append(items, counter.Item{Key: key, Numerator: truth.clicks[key], Denominator: shows})
	}
	for key, clicks := range truth.clicks {
		if truth.shows[key] == 0 {
			items = append(items, counter.Item{Key: key, Numerator: clicks})
		}
	}
	want := counter.Rank(items, 100, 20)
	var top struct{ Items []counter.Item }
	if code := getURL(t, base+"/api/v1/ratios/ctr/top?limit=20&min=100", &top); code != http.StatusOK {
		t.Fatalf("ratios top: %d", code)
	}
	if len(want) < 20 {
		t.Fatalf("the test's log has %d items with 100 shows, want 20 or more", len(want))
	}
	if fmt.Sprint(top.Items) != fmt.Sprint(want) {
		t.Errorf("top 20 by CTR:\n got %v\nwant %v", top.Items, want)
	}

	for _, name := range []string{"show", "click"} {
		counts := truth.shows
		col := 0
		if name == "click" {
			counts, col = truth.clicks, 1
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range counts {
				if !yield(k) {
					return
				}
			}
		})
		for len(keys) > 0 {
			batch := keys[:min(len(keys), 100)]
			keys = keys[len(batch):]
			q := url.Values{"key": batch}
			var body struct {
				Keys []struct {
					Key                  string
					Window, Today, Total int64
					WindowVisitors       int64 `json:"window_visitors"`
				}
			}
			if code := getURL(t, base+"/api/v1/counters/"+name+"?"+q.Encode(), &body); code != http.StatusOK {
				t.Fatalf("counter %s: %d", name, code)
			}
			for _, k := range body.Keys {
				if want := int64(len(truth.visitors[col][k.Key])); k.WindowVisitors != want {
					t.Errorf("counter %s key %s: %d distinct visitors in the window, want %d", name, k.Key, k.WindowVisitors, want)
				}
				if k.Window != counts[k.Key] || k.Total != counts[k.Key] || k.Today != truth.today[k.Key][col] {
					t.Errorf("counter %s key %s: window %d, today %d, total %d; want %d, %d, %d", name, k.Key,
						k.Window, k.Today, k.Total, counts[k.Key], truth.today[k.Key][col], counts[k.Key])
				}
			}
			if len(body.Keys) != len(batch) {
				t.Fatalf("counter %s: %d keys answered, %d asked", name, len(body.Keys), len(batch))
			}
		}
	}
}

// TestCountersEndToEnd: the real program follows a log of shows and
// clicks of 10,000 items with two counters and their ratio declared: the
// top 20 by click-through rate with at least 100 shows, and each item's
// window, daily and all-time counts and its distinct visitors in the
// window, equal a count of the lines; the same
// after a SIGKILL and restart, and after a replay of the same log, which
// adds nothing.
func TestCountersEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("120,000 lines: not in -short")
	}
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	truth := counterLog(t, log)
	decl := []string{"--counter", "show=GET /thumb/{id}.jpg", "--counter", "click=GET /watch/{id}", "--ratio", "ctr=click/show",
		"--db", db, "--tz", "UTC"}
	replay := func() {
		t.Helper()
		m := NewMain()
		m.Stdout, m.Stderr = os.Stderr, os.Stderr
		if err := m.ParseFlags(append(append([]string{"replay"}, decl...), log)); err != nil {
			t.Fatal(err)
		}
		err := m.Run(t.Context())
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	quoted := make([]string, len(decl))
	for i, a := range decl {
		quoted[i] = strings.ReplaceAll(a, " ", "\x1f") // a space within an argument: see childEnv
	}
	args := "--window-end log " + strings.Join(quoted, " ") + " " + log
	d := startDaemon(t, args)
	poll.Until(t, "every line counted and stored", func() bool {
		var st struct{ Requests int64 }
		if getURL(t, d.base()+"/api/v1/stats", &st) != http.StatusOK || st.Requests != truth.lines {
			return false
		}
		var series struct{ Points []struct{ Requests int64 } }
		now := time.Now().Unix()
		getURL(t, fmt.Sprintf("%s/api/v1/series?from=%d&to=%d&step=1h", d.base(), now-2*3600, now+60), &series)
		var stored int64
		for _, p := range series.Points {
			stored += p.Requests
		}
		return stored == truth.lines
	})
	checkCounters(t, d.base(), truth)

	d.stop(syscall.SIGKILL)
	d = startDaemon(t, args)
	checkCounters(t, d.base(), truth)

	if err := d.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.logTail())
	}
	replay() // the same log again: nothing new
	d = startDaemon(t, args)
	checkCounters(t, d.base(), truth)
}
