package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/logtally/logtally/internal/poll"
)

// Agents of the breakdowns' log: three browsers on three systems and two
// device classes.
const (
	chromeWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	safariIPhone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)

// dashboardBreakdowns are the breakdowns TestDashboardBreakdowns turns on:
// country (no --geoip) and utm-source stay off.
var dashboardBreakdowns = []string{"referrer", "channel", "utm-campaign", "browser", "os", "device", "status", "not-found", "hour", "weekday"}

// breakdownsLog writes a log of the day before clk's and of the live
// window, with known referrers, agents, campaigns, statuses and times, and
// returns its number of requests.
func breakdownsLog(t *testing.T, path string, clk *clock) int64 {
	t.Helper()
	referrers := []string{"-", "https://www.google.com/search?q=logtally", "https://news.ycombinator.com/item?id=1", "https://blog.example.net/a/post"}
	agents := []string{browser, chromeWindows, safariIPhone}
	// Campaigns a spreadsheet must take as text, quoted as CSV must.
	campaigns := []string{"", "?utm_campaign=Spring%2C+%22Sale%22", "?utm_campaign=%3D1%2B1", "?utm_campaign=-2"}
	var lines []string
	add := func(i int, when string) {
		req := fmt.Sprintf("GET /docs/%d%s HTTP/1.1", i%5, campaigns[i%len(campaigns)])
		status := []int{200, 200, 200, 404, 301}[i%5]
		if status == 404 {
			req = fmt.Sprintf("GET /missing/%d HTTP/1.1", i%3)
		}
		lines = append(lines, fmt.Sprintf(`192.0.2.%d - - [%s] "%s" %d 512 "%s" "%s"`,
			i%23, when, req, status, referrers[i%len(referrers)], agents[i%len(agents)]))
	}
	for i := range 48 { // the day before, at every half hour
		add(i, clk.At(-24*time.Hour+time.Duration(i)*30*time.Minute-12*time.Hour))
	}
	for i := range 90 { // the live window
		add(i, clk.At(-time.Duration(300-3*i)*time.Second))
	}
	appendLines(t, path, lines...)
	return int64(len(lines))
}

// panelAnswer is GET /api/v1/breakdowns/NAME's body, as the test reads
// it.
type panelAnswer struct {
	Items []struct {
		Key             string
		Count, Visitors int64
	}
	Exact *bool
}

// panelLimit is how many keys the dashboard shows of a breakdown.
func panelLimit(name string) int {
	switch name {
	case "hour":
		return 24
	case "weekday":
		return 7
	}
	return 10
}

// panelRows is the rows a panel shows for a breakdown's answer: key, count
// and, for the live window, visitors; numbers as their values.
func panelRows(a panelAnswer) [][]string {
	rows := [][]string{}
	for _, it := range a.Items {
		row := []string{it.Key, fmt.Sprint(it.Count)}
		if a.Exact == nil {
			row = append(row, fmt.Sprint(it.Visitors))
		}
		rows = append(rows, row)
	}
	return rows
}

// panelRowsJS is the JavaScript for a breakdown panel's rows, numbers as
// their values (data-value), as JSON.
func panelRowsJS(name string) string {
	return fmt.Sprintf(`JSON.stringify([...document.querySelectorAll("#bd-%s tbody tr")].map(tr =>
		[...tr.cells].map(c => c.dataset.value !== undefined ? c.dataset.value : c.textContent)))`, name)
}

// checkPanels waits until the panel of each breakdown named shows what
// the API answers with query (the live window for none).
func checkPanels(t *testing.T, b *chrome, m *Main, names []string, query string) {
	t.Helper()
	for _, name := range names {
		var a panelAnswer
		getJSON(t, m, fmt.Sprintf("/api/v1/breakdowns/%s?limit=%d%s", name, panelLimit(name), query), &a)
		if len(a.Items) == 0 {
			t.Fatalf("breakdown %s%s: no keys to show", name, query)
		}
		want, err := json.Marshal(panelRows(a))
		if err != nil {
			t.Fatal(err)
		}
		b.waitEval(t, "the panel of "+name+query, panelRowsJS(name), string(want))
	}
}

// TestDashboardBreakdowns loads the dashboard in Chromium from a daemon
// counting breakdowns, and checks that each breakdown on has a panel whose
// rows are the API's answer, for the live window and for a range of days
// chosen in the page; that a breakdown off has none; that a range with its
// days the wrong way round is refused in the page; and that a table's CSV
// download is its rows.
func TestDashboardBreakdowns(t *testing.T) {
	t.Parallel()
	b := newChrome(t, "/api/v1/sites")
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	total := breakdownsLog(t, log, clk)
	m := start(t, clk.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", "--public-listen", "127.0.0.1:0",
		"--breakdowns", strings.Join(dashboardBreakdowns, ","), log)
	poll.Until(t, "the log counted and committed", func() bool {
		var a panelAnswer
		getJSON(t, m, "/api/v1/breakdowns/status?from=2026-11-20&to=2026-11-21", &a)
		n := int64(0)
		for _, it := range a.Items {
			n += it.Count
		}
		return n == total
	})

	b.run(t, chromedp.Navigate("http://"+m.Addr()+"/"))
	// A panel for each breakdown on, in the page's order; none for those
	// off.
	var list struct {
		Breakdowns []struct{ Name string }
		Off        []string
	}
	getJSON(t, m, "/api/v1/breakdowns", &list)
	// request-time is off too: the log's format has no request time.
	if want := []string{"utm-source", "country", "request-time"}; !slices.Equal(list.Off, want) {
		t.Fatalf("breakdowns off: %q, want %q", list.Off, want)
	}
	b.waitEval(t, "the panels", `[...document.querySelectorAll("section[data-breakdown]")].map(s => s.dataset.breakdown).join(",")`,
		"channel,referrer,utm-campaign,browser,os,device,status,not-found,hour,weekday")
	for _, name := range list.Off {
		if n := b.eval(t, fmt.Sprintf(`String(document.querySelectorAll('[data-breakdown=%q], #bd-%s').length)`, name, name)); n != "0" {
			t.Errorf("breakdown %s is off, but the page has %s elements for it", name, n)
		}
	}

	// The live window: key, count and visitors, as the API has them.
	checkPanels(t, b, m, dashboardBreakdowns, "")
	if n := b.eval(t, `String(document.querySelectorAll("section[data-breakdown=hour] .heat .cell").length)`); n != "24" {
		t.Errorf("the hour's heat strip has %s cells, want 24", n)
	}
	checkPanelCSV(t, b, m, dir)

	// A range the wrong way round is refused in the page: the panels keep
	// the window.
	pickDates(t, b, "2026-11-21", "2026-11-20")
	b.waitEval(t, "the range refused", `String(!document.getElementById("dates-error").hidden)`, "true")
	if got := b.eval(t, `document.getElementById("breakdowns-span").textContent`); got != "In the live window" {
		t.Errorf("after a refused range the breakdowns are %q", got)
	}
	// The day before, chosen: every panel, the chart (by hour) and the top
	// pages answer for it.
	pickDates(t, b, "2026-11-20", "2026-11-20")
	b.waitEval(t, "the range taken", `String(document.getElementById("dates-error").hidden)`, "true")
	checkPanels(t, b, m, dashboardBreakdowns, "&from=2026-11-20&to=2026-11-20")
	b.waitEval(t, "the chart of the day", `String(document.querySelectorAll("#chart-table tbody tr").length)`, "24")
	b.waitEval(t, "the pages of the day", textOf("day-title"), "Top pages on 2026-11-20")
	// Both days: by day.
	pickDates(t, b, "2026-11-20", "2026-11-21")
	checkPanels(t, b, m, dashboardBreakdowns, "&from=2026-11-20&to=2026-11-21")
	b.waitEval(t, "the chart of the days", `String(document.querySelectorAll("#chart-table tbody tr").length)`, "2")

	checkPanelsPublic(t, b, m)
	b.checkClean(t)
}

// pickDates types a range of days into the page's date inputs.
func pickDates(t *testing.T, b *chrome, from, to string) {
	t.Helper()
	b.eval(t, fmt.Sprintf(`(() => {
		for (const [id, v] of [["from", %q], ["to", %q]]) {
			const e = document.getElementById(id);
			e.value = v;
			e.dispatchEvent(new Event("change", { bubbles: true }));
		}
		return "";
	})()`, from, to))
}

// checkPanelCSV downloads the campaigns' table as CSV, with the button of its
// panel, and checks that it is the table's header and rows, numbers as
// their values, and that a key a spreadsheet would take for a formula is
// written after a '.
func checkPanelCSV(t *testing.T, b *chrome, m *Main, dir string) {
	t.Helper()
	downloads := filepath.Join(dir, "downloads")
	// The file is there as soon as the download begins: it is read once
	// the browser says the download completed.
	var completed atomic.Bool
	if err := chromedp.ListenBrowser(b.ctx, func(ev any) {
		if e, ok := ev.(*cdpbrowser.EventDownloadProgress); ok && e.State == cdpbrowser.DownloadProgressStateCompleted {
			completed.Store(true)
		}
	}); err != nil {
		t.Fatal(err)
	}
	events := true
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads, EventsEnabled: &events}); err != nil {
		t.Fatal(err)
	}
	var a panelAnswer
	getJSON(t, m, "/api/v1/breakdowns/utm-campaign?limit=10", &a)
	want := [][]string{{"Campaign", "Page views", "Visitors"}}
	formulas := 0
	for _, row := range panelRows(a) {
		if strings.ContainsAny(row[0][:1], "=+-@") {
			row[0] = "'" + row[0]
			formulas++
		}
		want = append(want, row)
	}
	if formulas != 2 || !slices.ContainsFunc(want, func(r []string) bool { return r[0] == `Spring, "Sale"` }) {
		t.Fatalf("the campaigns to download are %q: want two formulas and one to quote", want)
	}
	b.run(t, chromedp.Click(chromedp.CSS(`section[data-breakdown="utm-campaign"] button.csv`)))
	file := filepath.Join(downloads, "logtally-utm-campaign-window.csv")
	poll.Until(t, "the CSV downloaded", completed.Load)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("the CSV has\n%q\nwant\n%q", got, want)
	}
}

// checkPanelsPublic asks the public listener for every breakdown the page asked
// the admin listener for: the page's panels need nothing of the operator's.
func checkPanelsPublic(t *testing.T, b *chrome, m *Main) {
	t.Helper()
	asked := b.requested("/api/v1/breakdowns")
	if len(asked) == 0 {
		t.Fatal("the page asked for no breakdowns")
	}
	for _, u := range asked {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if p.Query().Has("site") {
			t.Errorf("the page asked %s: breakdowns take no site", u)
		}
		resp, err := http.Get("http://" + m.PublicAddr() + p.RequestURI())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("public GET %s: %s", p.RequestURI(), resp.Status)
		}
	}
}
