package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/logtally/logtally/internal/poll"
)

// allBreakdowns turns every breakdown on.
const allBreakdowns = "referrer,channel,utm-source,utm-campaign,browser,os,device,country,status,not-found,hour,weekday"

// bdLine is a generated line and the keys a brute-force count gives it.
type bdLine struct {
	text     string
	when     time.Time
	host     string
	pageView bool
	keys     map[string]string // by breakdown; a breakdown it lacks is absent
}

// bdAgent is a user agent and what it tells; bot: a crawler's.
type bdAgent struct {
	ua, browser, os, device string
	bot                     bool
}

var bdAgents = []bdAgent{
	{ua: browser, browser: "Firefox", os: "Linux", device: "desktop"},
	{ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		browser: "Chrome", os: "Windows", device: "desktop"},
	{ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
		browser: "Safari", os: "iOS", device: "mobile"},
	{ua: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", bot: true},
}

// bdRefs are Referers with their referrer and channel keys; example.com
// is the site's own host (--own-hosts).
var bdRefs = [][3]string{
	{"-", "direct", "direct"},
	{"https://www.google.com/search?q=logs", "google.com", "search"},
	{"https://news.ycombinator.com/item?id=1", "news.ycombinator.com", "social"},
	{"https://example.com/p1", "direct", "direct"},
	{"https://blog.example.net/post", "blog.example.net", "other"},
}

// bdNets are the client networks with their country in the test database;
// the last is in none.
var bdNets = [][2]string{{"192.0.2.", "FR"}, {"198.51.100.", "DE"}, {"203.0.113.", "(unknown)"}}

// breakdownLog generates lines over two days, the last minutes of the
// second one at a line a second, each with its keys counted by brute
// force.
func breakdownLog(end time.Time) []bdLine {
	rng := rand.New(rand.NewPCG(31, 7))
	var out []bdLine
	const sparse, dense = 400, 900
	for i := range sparse + dense {
		var when time.Time
		if i < sparse {
			when = end.Add(-26 * time.Hour).Add(time.Duration(i) * 3 * time.Minute)
		} else {
			when = end.Add(-time.Duration(sparse+dense-1-i) * time.Second)
		}
		out = append(out, bdGen(rng, when))
	}
	return out
}

// bdGen generates one line at when.
func bdGen(rng *rand.Rand, when time.Time) bdLine {
	net := bdNets[rng.IntN(len(bdNets))]
	host := net[0] + strconv.Itoa(1+rng.IntN(20))
	ag := bdAgents[rng.IntN(len(bdAgents))]
	ref := bdRefs[rng.IntN(len(bdRefs))]
	path := "/p" + strconv.Itoa(rng.IntN(6))
	status := []int{200, 200, 200, 301, 404, 500}[rng.IntN(6)]
	query := ""
	switch rng.IntN(5) {
	case 0:
		path = "/style.css"
	case 1:
		query = "?utm_source=news&utm_campaign=" + []string{"spring", "fall"}[rng.IntN(2)]
	}
	req := "GET " + path + query + " HTTP/1.1"
	text := fmt.Sprintf(`%s - - [%s] "%s" %d 512 "%s" "%s"`, host, when.Format("02/Jan/2006:15:04:05 -0700"), req, status,
		ref[0], ag.ua)
	l := bdLine{text: text, when: when, host: host, keys: map[string]string{"status": strconv.Itoa(status)}}
	if status == 404 {
		l.keys["not-found"] = path
	}
	l.pageView = !ag.bot && path != "/style.css" && status < 400
	if l.pageView {
		maps.Copy(l.keys, map[string]string{"referrer": ref[1], "channel": ref[2], "browser": ag.browser, "os": ag.os,
			"device": ag.device, "country": net[1], "hour": fmt.Sprintf("%02d", when.UTC().Hour()),
			"weekday": strings.ToLower(when.UTC().Weekday().String()[:3])})
		if query != "" {
			l.keys["utm-source"] = "news"
			l.keys["utm-campaign"] = query[strings.LastIndexByte(query, '=')+1:]
		}
	}
	return l
}

// bdCount is a key's count and distinct visitors.
type bdCount struct{ count, visitors int64 }

// bruteForce counts each key of breakdown name over the lines dated in
// [from, to].
func bruteForce(lines []bdLine, name string, from, to time.Time) map[string]bdCount {
	counts := map[string]int64{}
	visitors := map[string]map[string]bool{}
	for _, l := range lines {
		key, ok := l.keys[name]
		if !ok || l.when.Before(from) || l.when.After(to) {
			continue
		}
		counts[key]++
		if visitors[key] == nil {
			visitors[key] = map[string]bool{}
		}
		// A visitor is an address within one day (UTC, the days of the
		// tests' daemons): a window across midnight holds two of a host.
		visitors[key][l.when.UTC().Format(time.DateOnly)+" "+l.host] = true
	}
	out := map[string]bdCount{}
	for k, n := range counts {
		out[k] = bdCount{n, int64(len(visitors[k]))}
	}
	return out
}

// countryMMDB writes a country database of bdNets to dir.
func countryMMDB(t *testing.T, dir string) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-Country", IncludeReservedNetworks: true, RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range bdNets[:2] {
		_, cidr, err := net.ParseCIDR(n[0] + "0/24")
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(cidr, mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(n[1])}}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "country.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// bdAnswer is GET /api/v1/breakdowns/NAME's body.
type bdAnswer struct {
	Breakdown string    `json:"breakdown"`
	From, To  time.Time `json:"-"`
	FromS     string    `json:"from"`
	ToS       string    `json:"to"`
	Exact     *bool     `json:"exact"`
	Other     *int64    `json:"other"`
	Items     []struct {
		Key      string `json:"key"`
		Count    int64  `json:"count"`
		Visitors int64  `json:"visitors"`
	} `json:"items"`
}

// breakdownAnswer returns the keys of GET /api/v1/breakdowns/NAME?query
// from the API at base, and the body as it came.
func breakdownAnswer(t *testing.T, base, name, query string) (map[string]bdCount, bdAnswer, string) {
	t.Helper()
	code, body := getURLBody(t, base+"/api/v1/breakdowns/"+name+"?limit=1000"+query)
	if code != 200 {
		t.Fatalf("breakdown %s%s: %d %s", name, query, code, body)
	}
	var a bdAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	a.From, _ = time.Parse(time.RFC3339, a.FromS)
	a.To, _ = time.Parse(time.RFC3339, a.ToS)
	got := map[string]bdCount{}
	for _, it := range a.Items {
		got[it.Key] = bdCount{it.Count, it.Visitors}
	}
	return got, a, body
}

// mainURL is the URL of m's API.
func mainURL(m *Main) string { return "http://" + m.Addr() }

// bdDays returns the first and last day of breakdownLog(end).
func bdDays(end time.Time) (first, last time.Time) {
	return end.Add(-26 * time.Hour).Truncate(24 * time.Hour), end.Truncate(24 * time.Hour)
}

// waitBreakdowns waits until the API at base has committed every line
// of lines, and published its window of them.
func waitBreakdowns(t *testing.T, base string, lines []bdLine, end time.Time) {
	t.Helper()
	first, last := bdDays(end)
	poll.Until(t, "every line committed, and the windows published", func() bool {
		got, _, _ := breakdownAnswer(t, base, "status", "&from="+first.Format(time.DateOnly)+"&to="+last.Format(time.DateOnly))
		var n int64
		for _, c := range got {
			n += c.count
		}
		win, a, _ := breakdownAnswer(t, base, "status", "")
		return n == int64(len(lines)) && maps.Equal(win, bruteForce(lines, "status", a.From, a.To))
	})
}

// checkBreakdowns checks each breakdown's answers at base, for the last
// day of breakdownLog(end), over all its days and in the live window,
// against a brute-force count of lines, and against the answers of an
// uninterrupted run at want, byte for byte.
func checkBreakdowns(t *testing.T, lines []bdLine, end time.Time, base, want string) {
	t.Helper()
	first, last := bdDays(end)
	day1, day2 := first.Format(time.DateOnly), last.Format(time.DateOnly)
	for _, name := range strings.Split(allBreakdowns, ",") {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				what, query string
				from, to    time.Time
			}{
				{"day", "&from=" + day2 + "&to=" + day2, last, last.Add(24*time.Hour - time.Second)},
				{"range", "&from=" + day1 + "&to=" + day2, first, last.Add(24*time.Hour - time.Second)},
			} {
				got, a, body := breakdownAnswer(t, base, name, c.query)
				if wantKeys := countsOnly(bruteForce(lines, name, c.from, c.to)); !maps.Equal(got, wantKeys) {
					t.Errorf("%s: got %v\nwant %v", c.what, got, wantKeys)
				}
				if a.Exact == nil || !*a.Exact || a.Other == nil || *a.Other != 0 {
					t.Errorf("%s: exact %v, other %v; want exact and nothing other: %s", c.what, a.Exact, a.Other, body)
				}
				if _, _, wantBody := breakdownAnswer(t, want, name, c.query); body != wantBody {
					t.Errorf("%s:\n%s\nuninterrupted:\n%s", c.what, body, wantBody)
				}
			}
			got, a, body := breakdownAnswer(t, base, name, "")
			if wantKeys := bruteForce(lines, name, a.From, a.To); !maps.Equal(got, wantKeys) {
				t.Errorf("window %s..%s: got %v\nwant %v", a.FromS, a.ToS, got, wantKeys)
			}
			if _, _, wantBody := breakdownAnswer(t, want, name, ""); body != wantBody {
				t.Errorf("window:\n%s\nuninterrupted:\n%s", body, wantBody)
			}
		})
	}
}

// countsOnly drops the visitors, which a range does not give.
func countsOnly(m map[string]bdCount) map[string]bdCount {
	out := map[string]bdCount{}
	for k, c := range m {
		out[k] = bdCount{count: c.count}
	}
	return out
}

// Each breakdown, counted by run, equals a brute-force count of a
// generated log with known referrers, agents, countries, statuses and
// times: in the live window (with its keys' distinct visitors), for a day
// and over a range; and a run stopped and started again halfway answers
// as one that never stopped. A window that spans midnight counts a host of
// both days twice, as the daemon counts visitors, an address a day.
func TestBreakdownsExact(t *testing.T) {
	t.Parallel()
	for _, end := range []time.Time{
		time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 21, 0, 3, 0, 0, time.UTC), // the window spans midnight
	} {
		t.Run(end.Format("15:04"), func(t *testing.T) {
			t.Parallel()
			testBreakdownsExact(t, end)
		})
	}
}

func testBreakdownsExact(t *testing.T, end time.Time) {
	dir := t.TempDir()
	lines := breakdownLog(end)
	clk := newClock(end.Add(10 * time.Second))
	log := filepath.Join(dir, "access.log")
	mmdb := countryMMDB(t, dir)
	args := func(db string) []string {
		return []string{"run", "--db", filepath.Join(dir, db), "--admin-listen", "127.0.0.1:0", "--window-end", "log",
			"--breakdowns", allBreakdowns, "--geoip", mmdb, "--own-hosts", "example.com", log}
	}
	texts := make([]string, len(lines))
	for i, l := range lines {
		texts[i] = l.text
	}
	half := len(lines) - 300 // inside the last window
	appendLines(t, log, texts[:half]...)
	m := start(t, clk.Now, args("db")...)
	poll.Until(t, "the first half read", func() bool { return m.pipeline().Lines() == int64(half) })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	appendLines(t, log, texts[half:]...)
	m = start(t, clk.Now, args("db")...)
	poll.Until(t, "the rest read", func() bool { return m.pipeline().Lines() == int64(len(lines)-half) })
	whole := start(t, clk.Now, args("db2")...)
	poll.Until(t, "an uninterrupted run to read all", func() bool { return whole.pipeline().Lines() == int64(len(lines)) })
	for _, d := range []*Main{m, whole} {
		waitBreakdowns(t, mainURL(d), lines, end)
	}
	checkBreakdowns(t, lines, end, mainURL(m), mainURL(whole))
}

// replay counts each breakdown as run does, and report's JSON gives each
// breakdown's keys over the days, equal to a brute-force count.
func TestBreakdownsReplayReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	lines := breakdownLog(end)
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	for _, l := range lines {
		appendLines(t, log, l.text)
	}
	mmdb := countryMMDB(t, dir)
	runCommand(t, "replay", "--db", db, "--breakdowns", allBreakdowns, "--geoip", mmdb, "--own-hosts", "example.com", log)
	day1, day2 := end.AddDate(0, 0, -1).Format(time.DateOnly), end.Format(time.DateOnly)
	out := runCommand(t, "report", "--db", db, "--json", "--from", day1, "--to", day2, "--pages", "1000", "--breakdowns", allBreakdowns)
	var body struct {
		Breakdowns []struct {
			Name, Counts string
			Lines        int64
			KeysExact    bool `json:"keys_exact"`
			Keys         []struct {
				Key   string
				Count int64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	names := strings.Split(allBreakdowns, ",")
	if len(body.Breakdowns) != len(names) {
		t.Fatalf("report has %d breakdowns, want %d: %s", len(body.Breakdowns), len(names), out)
	}
	from, to := end.Truncate(24*time.Hour).AddDate(0, 0, -1), end.Truncate(24*time.Hour).Add(24*time.Hour-time.Second)
	for i, b := range body.Breakdowns {
		if b.Name != names[i] {
			t.Errorf("section %d is %s, want %s", i, b.Name, names[i])
		}
		got := map[string]bdCount{}
		var sum int64
		for _, k := range b.Keys {
			got[k.Key] = bdCount{count: k.Count}
			sum += k.Count
		}
		if want := countsOnly(bruteForce(lines, b.Name, from, to)); !maps.Equal(got, want) {
			t.Errorf("%s: got %v\nwant %v", b.Name, got, want)
		}
		if !b.KeysExact || b.Lines != sum {
			t.Errorf("%s: keys exact %v, %d lines for keys of %d; want exact and equal", b.Name, b.KeysExact, b.Lines, sum)
		}
	}
}

// runCommand runs a command to its end and returns what it wrote.
func runCommand(t *testing.T, args ...string) string {
	t.Helper()
	var out strings.Builder
	m := NewMain()
	m.Stdout, m.Stderr = &out, io.Discard
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("%s: %v", args[0], err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
