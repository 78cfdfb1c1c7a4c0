package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/poll"
)

var updateScreenshot = flag.Bool("update-screenshot", false,
	"write docs/dashboard.png: the dashboard at 1280x900 from a daemon on testdata/sample.log")

// chrome is a headless Chromium driven over the DevTools protocol, with
// what the page reported: console messages, exceptions, log entries,
// dialogs and the requests it made.
type chrome struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string // console errors and warnings, exceptions, dialogs
	requests []string // URLs the page requested
	allowed  []string // URL substrings whose failed loads are expected
}

// newChrome starts Chromium, or skips the test where it is not installed.
// The flags keep it from reaching out to Google (the machine may have no
// network) and from touching any profile but a fresh one.
func newChrome(t *testing.T, allowedFailures ...string) *chrome {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("Chromium is not installed (Debian: apt-get install chromium); skipping the browser test")
	}
	profile := t.TempDir()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.Env("TZ=UTC"),
	)
	b := &chrome{allowed: allowedFailures}
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithListener(b.listen))
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute) // the browser's whole life
	b.ctx = ctx
	// Registered after TempDir, so it runs first: the browser has exited
	// before its profile is removed.
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// listen records what the page reports. It runs on the goroutine that
// reads the browser's messages, so it only records.
func (b *chrome) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		switch ev.Type {
		case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *cdplog.EventEntryAdded:
		e := ev.Entry
		if e.Level != cdplog.EntryLevelError && e.Level != cdplog.EntryLevelWarning {
			return
		}
		for _, a := range b.allowed {
			if e.Source == cdplog.EntrySourceNetwork && strings.Contains(e.URL, a) {
				return
			}
		}
		b.problems = append(b.problems, fmt.Sprintf("log %s/%s: %s %s", e.Source, e.Level, e.Text, e.URL))
	case *page.EventJavascriptDialogOpening:
		b.problems = append(b.problems, "dialog: "+ev.Message)
		go chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	}
}

func (b *chrome) run(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval returns the value of a JavaScript expression in the page.
func (b *chrome) eval(t *testing.T, js string) string {
	t.Helper()
	return evalAs[string](t, b, js)
}

func evalAs[T any](t *testing.T, b *chrome, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitEval polls a JavaScript expression until it returns want: the page
// changes on its own events, so the test waits for an outcome.
func (b *chrome) waitEval(t *testing.T, what, js, want string) {
	t.Helper()
	got := ""
	defer func() {
		if got != want {
			t.Logf("%s = %q, want %q", js, got, want)
		}
	}()
	poll.Until(t, what, func() bool { got = b.eval(t, js); return got == want })
}

// checkClean fails the test on any console error or warning, exception or
// dialog the page caused.
func (b *chrome) checkClean(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("the page reported %s", p)
	}
}

func (b *chrome) requested(substr string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, u := range b.requests {
		if strings.Contains(u, substr) {
			out = append(out, u)
		}
	}
	return out
}

// textOf is the JavaScript for an element's text.
func textOf(id string) string { return fmt.Sprintf("document.getElementById(%q).textContent", id) }

func getJSON(t *testing.T, m *Main, path string, v any) {
	t.Helper()
	status, body := get(t, m, path)
	if status != 200 {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

type pagesBody struct {
	Pages []struct {
		Path      string
		PageViews int64 `json:"pageviews"`
	}
}

// Paths a page must show as text, never as markup.
const (
	xssScript = `/<script>alert(1)</script>`
	xssImg    = `/"><img/src=x/onerror=alert(2)>`
)

// TestDashboardInBrowser loads the dashboard in a real Chromium from a
// daemon following a log, and checks that it shows what the API says, that
// it changes with the event stream and without a reload, that paths from
// the log are text, and that the page reports no error.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	b := newChrome(t,
		"/api/v1/sites", // 404 until sites exist: the selector stays hidden
	)
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	var lines []string
	for i := range 120 {
		lines = append(lines, line(fmt.Sprintf("192.0.2.%d", i%37), clk.At(-time.Duration(300-2*i)*time.Second),
			fmt.Sprintf("GET /docs/%d HTTP/1.1", i%7), 200, browser))
	}
	lines = append(lines,
		line("198.51.100.1", clk.At(-10*time.Second), "GET /<script>alert(1)</script> HTTP/1.1", 200, browser),
		line("198.51.100.2", clk.At(-9*time.Second), `GET /\x22><img/src=x/onerror=alert(2)> HTTP/1.1`, 200, browser),
		`<script>alert("a rejected line")</script>`,
	)
	appendLines(t, log, lines...)
	// Minutes kept for 30 minutes: the chart of the last hour shows what
	// it does not hold.
	m := start(t, clk.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", "--keep-minutes", "30m", log)
	poll.Until(t, "the log read", func() bool { return stats(t, m).Requests == 122 })
	poll.Until(t, "the log committed", func() bool { return m.pipeline().Commits() > 0 }) // for the day's pages

	b.run(t, chromedp.Navigate("http://"+m.Addr()+"/"))
	var st struct {
		Visitors, Pageviews, Requests, Rejected int64
	}
	getJSON(t, m, "/api/v1/stats", &st)
	var pages pagesBody
	getJSON(t, m, "/api/v1/pages", &pages)

	// The figures, as numbers in the DOM, equal /api/v1/stats; the top
	// pages equal /api/v1/pages.
	b.waitEval(t, "the requests figure", `document.getElementById("requests").dataset.value || ""`, fmt.Sprint(st.Requests))
	for id, want := range map[string]int64{"visitors": st.Visitors, "pageviews": st.Pageviews, "requests": st.Requests, "rejected": st.Rejected} {
		if got := b.eval(t, textOf(id)); strings.ReplaceAll(got, ",", "") != fmt.Sprint(want) {
			t.Errorf("#%s shows %q, /api/v1/stats says %d", id, got, want)
		}
	}
	shown := evalAs[[]struct{ Path, Count string }](t, b, `[...document.querySelectorAll("#live-pages li")].map(li => ({
		Path: li.querySelector(".path").textContent, Count: li.querySelector(".count").textContent}))`)
	if len(shown) != len(pages.Pages) {
		t.Fatalf("%d top pages shown, /api/v1/pages has %d: %+v", len(shown), len(pages.Pages), shown)
	}
	for i, p := range pages.Pages {
		if shown[i].Path != p.Path || shown[i].Count != fmt.Sprint(p.PageViews) {
			t.Errorf("top page %d shown as %+v, /api/v1/pages has %+v", i+1, shown[i], p)
		}
	}

	// The default breakdowns' panels, as /api/v1/breakdowns/NAME has them;
	// none for country, off without --geoip.
	checkPanels(t, b, m, []string{"status", "hour"}, "")
	if n := b.eval(t, `String(document.querySelectorAll("[data-breakdown=country]").length)`); n != "0" {
		t.Errorf("%s panels for country, off without --geoip", n)
	}

	// Paths and lines from the log are text: both attack paths are shown
	// as written, and they made no element.
	paths := evalAs[[]string](t, b, `[...document.querySelectorAll("#live-pages .path")].map(e => e.textContent)`)
	for _, want := range []string{xssScript, xssImg} {
		found := false
		for _, p := range paths {
			found = found || p == want
		}
		if !found {
			t.Errorf("path %q not shown as text among %q", want, paths)
		}
	}
	b.waitEval(t, "the rejected sample", `[...document.querySelectorAll("#samples code")].map(e => e.textContent).join("\n")`,
		`<script>alert("a rejected line")</script>`)
	if n := b.eval(t, `String(document.querySelectorAll("img").length + ":" + document.scripts.length)`); n != "0:1" {
		t.Errorf("images:scripts in the page = %s, want 0:1 (only dashboard.js)", n)
	}

	// The rest of the page: the chart of the last hour by minute, the top
	// pages of the day as /api/v1/pages?from=D&to=D has them, the followed
	// file, the widget, and no site selector while there are no sites.
	b.waitEval(t, "the chart", `String(document.querySelectorAll("#chart path.line").length)`, "3")
	if n := b.eval(t, `String(document.querySelectorAll("#chart-table tbody tr").length)`); n != "60" {
		t.Errorf("chart table has %s rows, want 60 (an hour by minute)", n)
	}
	// Steps before kept_from are shown as not kept, not as zeros; the
	// others carry status classes, drawn as bars.
	var series struct {
		Points []struct{ Requests *int64 }
	}
	to := clk.Now().Unix() // the window's last second
	getJSON(t, m, fmt.Sprintf("/api/v1/series?from=%d&to=%d&step=1m", to-59*60, to), &series)
	unkept := 0
	for _, p := range series.Points {
		if p.Requests == nil {
			unkept++
		}
	}
	if unkept == 0 || unkept == 60 {
		t.Fatalf("%d of 60 points not kept, want some with --keep-minutes 30m", unkept)
	}
	if n := b.eval(t, `String(document.querySelectorAll("#chart-table tbody tr td.unkept").length)`); n != fmt.Sprint(3*unkept) {
		t.Errorf("%s cells say 'not kept', want %d (3 for each of %d points)", n, 3*unkept, unkept)
	}
	if n := b.eval(t, `document.getElementById("status-block").hidden ? "hidden" : String(document.querySelectorAll("#status-chart rect").length > 0)`); n != "true" {
		t.Errorf("status classes: %s, want bars", n)
	}
	for _, r := range []struct{ button, rows string }{{"day", "24"}, {"month", "30"}, {"hour", "60"}} {
		b.run(t, chromedp.Click(chromedp.CSS(`.tabs button[data-range="`+r.button+`"]`)))
		b.waitEval(t, "the chart of the "+r.button, `String(document.querySelectorAll("#chart-table tbody tr").length)`, r.rows)
	}
	var day pagesBody
	getJSON(t, m, "/api/v1/pages?from=2026-11-21&to=2026-11-21&limit=10", &day)
	if len(day.Pages) == 0 {
		t.Fatal("no pages for the day")
	}
	b.waitEval(t, "the day panel", `String(document.querySelectorAll("#day-pages li").length)`, fmt.Sprint(len(day.Pages)))
	dayShown := evalAs[[]struct{ Path, Count string }](t, b, `[...document.querySelectorAll("#day-pages li")].map(li => ({
		Path: li.querySelector(".path").textContent, Count: li.querySelector(".count").textContent}))`)
	for i, p := range day.Pages {
		if dayShown[i].Path != p.Path || dayShown[i].Count != fmt.Sprint(p.PageViews) {
			t.Errorf("top page %d of the day shown as %+v, /api/v1/pages?from&to has %+v", i+1, dayShown[i], p)
		}
	}
	if h := b.eval(t, `String(document.getElementById("day-note").hidden)`); h != "true" {
		t.Errorf("day note shown (%s) beside the day's pages", b.eval(t, textOf("day-note")))
	}
	b.waitEval(t, "the followed file", `document.querySelector("#files tbody td").textContent`, log)
	if h := b.eval(t, `String(document.getElementById("site-picker").hidden)`); h != "true" {
		t.Errorf("site selector hidden = %s, want true while /api/v1/sites is absent", h)
	}
	widget, err := os.ReadFile(filepath.Join("..", "..", "api", "web", "widget.html"))
	if err != nil {
		t.Fatal(err)
	}
	b.waitEval(t, "the widget snippet", textOf("widget"), string(widget))

	// New lines change the figures without a reload, through the stream.
	appendLines(t, log,
		line("203.0.113.1", clk.At(-2*time.Second), "GET /new HTTP/1.1", 200, browser),
		line("203.0.113.2", clk.At(-1*time.Second), "GET /new HTTP/1.1", 200, browser),
		line("203.0.113.2", clk.At(-1*time.Second), "GET /style.css HTTP/1.1", 200, browser),
	)
	poll.Until(t, "the new lines counted", func() bool { return stats(t, m).Requests == st.Requests+3 })
	getJSON(t, m, "/api/v1/stats", &st)
	b.waitEval(t, "requests to change", `document.getElementById("requests").dataset.value`, fmt.Sprint(st.Requests))
	b.waitEval(t, "visitors to change", `document.getElementById("visitors").dataset.value`, fmt.Sprint(st.Visitors))
	b.waitEval(t, "page views to change", `document.getElementById("pageviews").dataset.value`, fmt.Sprint(st.Pageviews))
	if s := b.eval(t, `document.getElementById("conn").dataset.state`); s != "live" {
		t.Errorf("connection state %q, want live", s)
	}
	if got := b.requested("/api/v1/stats"); len(got) != 0 {
		t.Errorf("the page polled %q: it should have used the event stream", got)
	}
	if got := b.requested("/api/v1/events"); len(got) != 1 {
		t.Errorf("the page opened the event stream %d times, want once: %q", len(got), got)
	}
	b.checkClean(t)
}

// TestDashboardFallsBackToPolling loads the page when the daemon refuses it
// a stream (--max-streams 1, and another client holds it): the page polls
// the cached endpoints instead and still follows the log.
func TestDashboardFallsBackToPolling(t *testing.T) {
	t.Parallel()
	b := newChrome(t, "/api/v1/sites", "/api/v1/events")
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	appendLines(t, log, line("192.0.2.1", clk.At(-time.Minute), "GET /a HTTP/1.1", 200, browser))
	m := start(t, clk.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", "--max-streams", "1", log)
	poll.Until(t, "the log read", func() bool { return stats(t, m).Requests == 1 })

	resp, err := http.Get("http://" + m.Addr() + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the one stream: %s", resp.Status)
	}
	if status, body := get(t, m, "/api/v1/events"); status != 503 || !strings.Contains(body, "too many event streams") {
		t.Fatalf("a second stream: %d %s, want 503", status, body)
	}

	b.run(t, chromedp.Navigate("http://"+m.Addr()+"/"))
	b.waitEval(t, "the figures", `document.getElementById("requests").dataset.value || ""`, "1")
	b.waitEval(t, "the polling state", `document.getElementById("conn").dataset.state`, "polling")
	appendLines(t, log, line("192.0.2.2", clk.At(-time.Second), "GET /b HTTP/1.1", 200, browser))
	poll.Until(t, "the new line counted", func() bool { return stats(t, m).Requests == 2 })
	b.waitEval(t, "the figures to follow", `document.getElementById("requests").dataset.value`, "2")
	if got := b.requested("/api/v1/stats"); len(got) == 0 {
		t.Error("the page did not poll /api/v1/stats")
	}
	b.checkClean(t)
}

// TestCloseEndsEventStreams checks that stopping the daemon ends an open
// event stream instead of waiting for its client.
func TestCloseEndsEventStreams(t *testing.T) {
	t.Parallel()
	m := start(t, time.Now, "run", "--db", filepath.Join(t.TempDir(), "db"), "--admin-listen", "127.0.0.1:0")
	resp, err := http.Get("http://" + m.Addr() + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET /api/v1/events: %s, %s", resp.Status, ct)
	}
	first := make([]byte, 64)
	if _, err := resp.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := m.Close(); err != nil {
		t.Fatalf("Close with a stream open: %v", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("Close took %s with a stream open", d)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the stream ended with %v, want a clean end", err)
	}
}

// TestDashboardOff checks that --dashboard=false serves no page, and that
// the page has its security headers when on.
func TestDashboardOff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	on := start(t, time.Now, "run", "--db", filepath.Join(dir, "db1"), "--admin-listen", "127.0.0.1:0")
	resp, err := http.Get("http://" + on.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("GET / = %d with CSP %q", resp.StatusCode, csp)
	}
	off := start(t, time.Now, "run", "--db", filepath.Join(dir, "db2"), "--admin-listen", "127.0.0.1:0", "--dashboard=false")
	for _, p := range []string{"/", "/ui/dashboard.js"} {
		if status, body := get(t, off, p); status != 404 {
			t.Errorf("--dashboard=false: GET %s = %d %s, want 404", p, status, body)
		}
	}
	if status, _ := get(t, off, "/api/v1/stats"); status != 200 {
		t.Errorf("--dashboard=false: the API answers %d", status)
	}
}

// TestHeaderWidgetInBrowser runs the README's header widget, as the page
// serves it, against answers of one and of many, in Chromium.
func TestHeaderWidgetInBrowser(t *testing.T) {
	t.Parallel()
	b := newChrome(t)
	widget, err := os.ReadFile(filepath.Join("..", "..", "api", "web", "widget.html"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	answer := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html><html><head><link rel=\"icon\" href=\"data:,\"></head><body><p>%s</p></body></html>", widget)
		case "/api/v1/stats":
			mu.Lock()
			defer mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, answer)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tests := []struct{ stats, want string }{
		{`{"window_seconds":600,"visitors":1,"pageviews":1}`, "1 visitor, 1 page view in the last 10 minutes"},
		{`{"window_seconds":60,"visitors":2,"pageviews":1234}`, "2 visitors, 1,234 page views in the last minute"},
		{`{"window_seconds":90,"visitors":0,"pageviews":0}`, "0 visitors, 0 page views in the last 90 seconds"},
	}
	for _, tt := range tests {
		mu.Lock()
		answer = tt.stats
		mu.Unlock()
		b.run(t, chromedp.Navigate(srv.URL+"/"))
		b.waitEval(t, "the widget", `document.getElementById("live").textContent`, tt.want)
	}
	b.checkClean(t)
}

// TestDashboardScreenshot writes docs/dashboard.png, the README's picture of
// the page, from a daemon on testdata/sample.log:
//
//	go test ./cmd/logtally -run TestDashboardScreenshot -update-screenshot
//
// Not parallel: it runs the daemon from another working directory.
func TestDashboardScreenshot(t *testing.T) {
	if !*updateScreenshot {
		t.Skip("writes docs/dashboard.png only with -update-screenshot")
	}
	b := newChrome(t, "/api/v1/sites")
	out, err := filepath.Abs(filepath.Join("..", "..", "docs", "dashboard.png"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sample.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Run as the README runs it, from a directory holding
	// testdata/sample.log, so that the page shows the same names.
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "testdata", "sample.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	m := start(t, time.Now, "run", "--admin-listen", "127.0.0.1:0", "--window-end", "log", "--tz", "UTC",
		filepath.Join("testdata", "sample.log"))
	poll.Until(t, "the sample read", func() bool { return stats(t, m).Requests == 396 })
	poll.Until(t, "the sample committed", func() bool { return m.pipeline().Commits() > 0 })
	b.run(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("http://"+m.Addr()+"/"))
	b.waitEval(t, "the figures", `document.getElementById("requests").dataset.value || ""`, "396")
	b.waitEval(t, "the chart", `String(document.querySelectorAll("#chart path.line").length)`, "3")
	b.waitEval(t, "the status", `String(document.querySelectorAll("#files tbody tr").length)`, "1")
	b.waitEval(t, "the day panel", `String(document.querySelectorAll("#day-pages li").length)`, "10")
	b.waitEval(t, "the status codes", `String(document.querySelectorAll("#bd-status tbody tr").length > 0)`, "true")
	b.run(t, chromedp.Sleep(300*time.Millisecond))
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	b.checkClean(t)
	t.Logf("wrote %s (%d bytes)", out, len(png))
}

// TestDashboardSites: with several sites the dashboard offers them, all
// sites first, and a site chosen shows that site's window, as
// /api/v1/stats?site= has it, polled (the event stream is of all sites).
func TestDashboardSites(t *testing.T) {
	t.Parallel()
	b := newChrome(t)
	dir := t.TempDir()
	log, shop, truth := sitesLog(t, dir)
	m := start(t, time.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", "--format", "vhost_combined",
		"--site-field", "%v", "--site", "shop.example.org="+shop, "--window-end", "log", log)
	poll.Until(t, "the logs read", func() bool { return stats(t, m).Requests == truth[logtally.AllSites].requests })
	poll.Until(t, "the logs committed", func() bool { return m.pipeline().Commits() > 0 }) // for each site's history
	b.run(t, chromedp.Navigate("http://"+m.Addr()+"/"))
	b.waitEval(t, "the site selector", `String(!document.getElementById("site-picker").hidden)`, "true")
	options := evalAs[[]string](t, b, `[...document.querySelectorAll("#site option")].map(o => o.value)`)
	if want := []string{"", "blog.example.org", "docs.example.org", "shop.example.org", "www.example.org"}; !slices.Equal(options, want) {
		t.Errorf("site options %q, want %q", options, want)
	}
	b.waitEval(t, "all sites' requests", `document.getElementById("requests").dataset.value || ""`,
		fmt.Sprint(truth[logtally.AllSites].requests))
	for _, site := range []string{"docs.example.org", "shop.example.org"} {
		b.eval(t, fmt.Sprintf(`(() => { const s = document.getElementById("site"); s.value = %q; s.dispatchEvent(new Event("change")); return ""; })()`, site))
		b.waitEval(t, site+"'s requests", `document.getElementById("requests").dataset.value || ""`, fmt.Sprint(truth[site].requests))
		if v := b.eval(t, `document.getElementById("visitors").dataset.value || ""`); v != fmt.Sprint(len(truth[site].visitors)) {
			t.Errorf("%s: visitors shown %s, want %d", site, v, len(truth[site].visitors))
		}
	}
	b.checkClean(t)
}

// TestDashboardWithAdminToken: with --admin-token-file, the dashboard works
// in a real browser once its user gives the token at the browser's prompt
// for basic authentication, answered here over the DevTools protocol as a
// person would: the page, its polls and its event stream all carry it. Its
// rejected lines are redacted.
func TestDashboardWithAdminToken(t *testing.T) {
	t.Parallel()
	b := newChrome(t)
	const token = "dGhlIGFkbWluIHRva2VuIG9mIHRoZSB0ZXN0"
	dir := t.TempDir()
	file, log := filepath.Join(dir, "token"), filepath.Join(dir, "access.log")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	appendLines(t, log, line("192.0.2.1", clk.At(-time.Minute), "GET /a HTTP/1.1", 200, browser),
		`203.0.113.77 - alice [not a time] "GET /login?password=hunter2 HTTP/1.1" 200 5 "-" "-"`)
	m := start(t, clk.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0",
		"--admin-token-file", file, log)

	var prompts atomic.Int64
	if err := chromedp.Listen(b.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *fetch.EventRequestPaused:
			go chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		case *fetch.EventAuthRequired:
			prompts.Add(1)
			go chromedp.Call(b.ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
				AuthChallengeResponse: &fetch.AuthChallengeResponse{
					Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: "operator", Password: token}})
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)}); err != nil {
		t.Fatal(err)
	}
	b.run(t, chromedp.Navigate("http://"+m.Addr()+"/"))
	b.waitEval(t, "the figures", `document.getElementById("requests").dataset.value || ""`, "1")
	b.waitEval(t, "the event stream", `document.getElementById("conn").dataset.state`, "live")
	b.waitEval(t, "the rejected line, redacted", `String(document.getElementById("samples").textContent.includes("203.0.113.0/24 - - [not a time] \"GET /login?…"))`, "true")
	if got := b.eval(t, `document.body.textContent`); strings.Contains(got, "hunter2") || strings.Contains(got, "203.0.113.77") || strings.Contains(got, "alice") {
		t.Errorf("the dashboard shows what is personal: %s", got)
	}
	if prompts.Load() == 0 {
		t.Error("the browser was never asked for the token")
	}
	b.checkClean(t)
}
