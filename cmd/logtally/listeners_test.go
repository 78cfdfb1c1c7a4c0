package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/internal/poll"
)

// personal is what the test log holds of its visitors: client addresses,
// a user name and query strings. No answer of either listener and no line
// of the daemon's log may hold any of it.
// ("abcd:12" is more of the IPv6 address than its /48, as a part of it
// cut off from the rest would show.)
var personal = []string{"198.51.100.23", "203.0.113.77", "2001:db8:abcd:12::7", "abcd:12", "alice", "hunter2",
	"4111111111111111", "password=", "card=", "q=secret"}

// writePersonalLog writes a log in the combined format, dated now, whose
// lines, counted and rejected alike, carry what personal lists; it returns
// its path and how many lines it has.
func writePersonalLog(t *testing.T, now time.Time) (string, int) {
	t.Helper()
	ts := now.UTC().Format("02/Jan/2006:15:04:05 -0700")
	lines := []string{
		`198.51.100.23 - alice [` + ts + `] "GET /login?password=hunter2 HTTP/1.1" 200 512 "https://www.example.com/?q=secret" "Mozilla/5.0"`,
		`203.0.113.77 - - [` + ts + `] "GET /p/1?card=4111111111111111 HTTP/1.1" 200 512 "-" "Mozilla/5.0"`,
		`2001:db8:abcd:12::7 - alice [` + ts + `] "GET /p/2?password=hunter2 HTTP/1.1" 200 512 "http://alice:hunter2@203.0.113.77/" "Mozilla/5.0"`,
		// Rejected: a bad time, a line of no format, a bad number.
		`203.0.113.77 - alice [not a time] "GET /login?password=hunter2&card=4111111111111111 HTTP/1.1" 200 5 "-" "Mozilla/5.0"`,
		`garbage from 198.51.100.23 asking /pay?card=4111111111111111`,
		`2001:db8:abcd:12::7 - alice [` + ts + `] "GET /p/3?card=4111111111111111 HTTP/1.1" 200 lots "-" "-"`,
		// Rejected: a line in another format, a virtual host first.
		`www.example.com:443 203.0.113.77 - alice [` + ts + `] "GET /x?password=hunter2 HTTP/1.1" 200 5 "-" "-"`,
		// Rejected and long: the sample's cut (the last of them, the log's)
		// falls in the middle of an address.
		straddle(`198.51.100.23 - alice [`+ts+`] "GET /search?q=secret`, 4*ingest.MaxSampleSize) + ` HTTP/1.1" 200 x "-" "-"`,
		straddle(`x /search?q=secret`, 4*256) + ` 200`,
	}
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, len(lines)
}

// straddle returns prefix padded so that an IPv6 address that follows it
// straddles byte at, which falls after "2001:db8:abcd:12".
func straddle(prefix string, at int) string {
	return prefix + strings.Repeat("x", at-len(prefix)-17) + " 2001:db8:abcd:12::7"
}

// TestNothingPersonalLeaves starts the daemon with the default flags plus
// a public listener (with CORS), counters and a ratio, on a log whose
// counted and rejected lines carry client addresses, a user name and query
// strings. Route by route (every route the API has), the public listener
// answers only the public figures and a 404 for every other route, with
// the CORS headers; the admin listener answers every route, without them.
// No answer of either, the event stream's first event, the status and the
// dashboard included, holds anything personal of the log, and neither does
// the daemon's log; with --no-samples alike. --show-rejected-lines shows
// the rejected lines whole in the admin listener's status, and nowhere
// else.
func TestNothingPersonalLeaves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, flags string
		samples     string // what the status's rejected lines hold: a redacted one, a whole one, or "" for none
	}{
		{"defaults", "", `"203.0.113.0/24 - - [not a time] \"GET /login?… HTTP/1.1\" 200 5 \"-\" \"Mozilla/5.0\""`},
		{"no samples", "--no-samples", ""},
		{"whole samples", "--show-rejected-lines", `password=hunter2\u0026card=4111111111111111`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log, n := writePersonalLog(t, time.Now())
			d := startDaemon(t, strings.Join([]string{"--public-listen 127.0.0.1:0 --cors-origin https://www.example.com",
				"--db", filepath.Join(t.TempDir(), "db"), "--counter page=GET\x1f/p/{id} --counter ok=GET\x1f/p/{id}\x1fstatus=2xx",
				"--ratio r=ok/page", tt.flags, log}, " "))
			public := d.publicAddr()
			st := waitRead(t, d.base(), n)
			if st.Lines.Rejected != 6 {
				t.Fatalf("%d lines rejected, want 6", st.Lines.Rejected)
			}
			for _, l := range []string{d.base(), "http://" + public} {
				walkRoutes(t, l, l == d.base(), tt.samples)
			}
			if err := d.stop(syscall.SIGTERM); err != nil {
				t.Fatalf("stopped: %v", err)
			}
			d.mu.Lock()
			logged := d.log.String()
			d.mu.Unlock()
			if !strings.Contains(logged, "rejected line") {
				t.Errorf("the daemon logged no rejected line:\n%s", logged)
			}
			if leak := leaked(logged); leak != "" {
				t.Errorf("the daemon's log holds %q:\n%s", leak, logged)
			}
		})
	}
}

var servingPublic = regexp.MustCompile(`msg="serving the public figures" addr=(\S+)`)

// publicAddr returns the address of the daemon's public listener, as its
// log names it.
func (d *daemon) publicAddr() string {
	d.t.Helper()
	var addr string
	poll.Until(d.t, "the daemon's public listener", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		if m := servingPublic.FindSubmatch(d.log.Bytes()); m != nil {
			addr = string(m[1])
		}
		return addr != ""
	})
	return addr
}

// statusLines is the part of /api/v1/status that waitRead reads.
type statusLines struct {
	Lines struct{ Read, Rejected int64 }
	Store struct{ Commits int64 }
}

// waitRead waits until the daemon at base has read and committed n lines.
func waitRead(t *testing.T, base string, n int) statusLines {
	t.Helper()
	var st statusLines
	poll.Until(t, fmt.Sprintf("%d lines read and committed", n), func() bool {
		resp, err := http.Get(base + "/api/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		st = statusLines{}
		json.NewDecoder(resp.Body).Decode(&st)
		return st.Lines.Read == int64(n) && st.Store.Commits > 0
	})
	return st
}

// walkRoutes asks the listener at base for every route of the API (the
// routes its table lists, and a few it has not), and checks that it
// answers as the admin listener (admin) or the public one must: every
// route on the admin listener, the public ones alone on the public one
// (and a 404 naming no endpoint for every other), the CORS headers on the
// public one only, and nothing personal in any answer but the admin
// listener's status with whole samples, which holds samples as given.
func walkRoutes(t *testing.T, base string, admin bool, samples string) {
	t.Helper()
	today := time.Now().UTC().Format(time.DateOnly)
	unknown := []string{"/nope", "/debug/pprof/", "/api/v1/status/"} // routes of no listener
	targets := map[string]bool{}
	for _, r := range apiRoutes() {
		path := strings.NewReplacer("ratios/{name}", "ratios/r", "{name}", "page").Replace(r.Path)
		targets[path] = r.Public
	}
	targets["/api/v1/pages?from="+today+"&to="+today] = true
	targets["/api/v1/series?counter=page"] = true
	targets["/api/v1/pages/count?path=/login"] = true
	for _, target := range unknown {
		targets[target] = false
	}
	for target, public := range targets {
		code, header, body := getFromOrigin(t, base+target)
		served := code != http.StatusNotFound || !strings.Contains(body, `"no such endpoint: `)
		want := public || admin && !slices.Contains(unknown, target)
		switch {
		case served != want:
			t.Errorf("%s%s: %d %.200s; want served %v", base, target, code, body, want)
		case code >= 500:
			t.Errorf("%s%s: %d %.200s", base, target, code, body)
		}
		if got := header.Get("Access-Control-Allow-Origin"); admin && len(corsOf(header)) > 0 || !admin && got != "https://www.example.com" {
			t.Errorf("%s%s: CORS headers %v on the %s listener", base, target, corsOf(header), map[bool]string{true: "admin", false: "public"}[admin])
		}
		isStatus := strings.HasPrefix(target, "/api/v1/status") && admin && code == http.StatusOK
		if isStatus && samples != "" && !strings.Contains(body, samples) {
			t.Errorf("%s%s holds no %s: %s", base, target, samples, body)
		}
		if isStatus && samples == "" && !strings.Contains(body, `"rejected_samples":[]`) {
			t.Errorf("%s%s holds rejected lines with --no-samples: %s", base, target, body)
		}
		if leak := leaked(body); leak != "" && !(isStatus && strings.Contains(samples, "hunter2")) {
			t.Errorf("%s%s holds %q: %s", base, target, leak, body)
		}
	}
}

// apiRoutes returns the routes of the API that run serves, as its table
// lists them.
func apiRoutes() []api.Route {
	s := api.New(api.DefaultConfig(), api.Deps{Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} },
		Metrics: prometheus.NewRegistry()})
	defer s.Close()
	return s.Routes()
}

// getFromOrigin GETs url as a browser on https://www.example.com does, and returns
// the answer; of an event stream, up to the end of its first event.
func getFromOrigin(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://www.example.com")
	client := http.Client{Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(body)
	}
	var event strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		event.WriteString(sc.Text() + "\n")
		if sc.Text() == "" && strings.Contains(event.String(), "data:") {
			return resp.StatusCode, resp.Header, event.String()
		}
	}
	t.Fatalf("%s: the stream ended before its first event: %v\n%s", url, sc.Err(), event.String())
	return 0, nil, ""
}

// corsOf returns the CORS headers of h.
func corsOf(h http.Header) []string {
	var names []string
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			names = append(names, k)
		}
	}
	return names
}

// leaked returns the first thing of personal that s holds, or "".
func leaked(s string) string {
	for _, p := range personal {
		if strings.Contains(s, p) {
			return p
		}
	}
	return ""
}

// TestAdminToken: with --admin-token-file, the admin listener answers only
// a request that carries the token, as a bearer token or as the password
// of basic authentication (what a browser sends for the dashboard and its
// event stream), and may then leave loopback; the public listener asks for
// none.
func TestAdminToken(t *testing.T) {
	t.Parallel()
	const token = "c2VjcmV0LXRva2VuLW9mLXRoZS1hZG1pbg"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := start(t, time.Now, "run", "--db", filepath.Join(t.TempDir(), "db"), "--admin-listen", "0.0.0.0:0",
		"--public-listen", "127.0.0.1:0", "--admin-token-file", file)
	basic := func(r *http.Request) { r.SetBasicAuth("anyone", token) }
	tests := []struct {
		name, url string
		auth      func(*http.Request)
		want      int
	}{
		{"no token", "http://" + m.Addr() + "/api/v1/status", func(*http.Request) {}, 401},
		{"a wrong token", "http://" + m.Addr() + "/api/v1/status", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token+"x") }, 401},
		{"a wrong password", "http://" + m.Addr() + "/", func(r *http.Request) { r.SetBasicAuth("anyone", "nope") }, 401},
		{"the token", "http://" + m.Addr() + "/api/v1/status", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, 200},
		{"the token, to /metrics", "http://" + m.Addr() + "/metrics", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, 200},
		{"the dashboard, with basic authentication", "http://" + m.Addr() + "/", basic, 200},
		{"the dashboard's status", "http://" + m.Addr() + "/api/v1/status", basic, 200},
		{"the dashboard's event stream", "http://" + m.Addr() + "/api/v1/events", basic, 200},
		{"the public listener", "http://" + m.PublicAddr() + "/api/v1/stats", func(*http.Request) {}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.auth(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close() // the event stream's too, once its headers are in
			if resp.StatusCode != tt.want {
				t.Errorf("GET %s: %d, want %d", tt.url, resp.StatusCode, tt.want)
			}
			if tt.want != 401 {
				return
			}
			body, _ := io.ReadAll(resp.Body)
			if !strings.HasPrefix(string(body), `{"error":"the admin API needs its token`) || len(resp.Header.Values("WWW-Authenticate")) != 2 {
				t.Errorf("GET %s: %s %v, want a JSON error and the challenges", tt.url, body, resp.Header)
			}
		})
	}
}

// TestListenIsDeprecated: --listen still sets the admin listener, and the
// daemon warns that it is deprecated, naming the flags that replace it.
func TestListenIsDeprecated(t *testing.T) {
	t.Parallel()
	m, log := startLogged(t, "run", "--db", filepath.Join(t.TempDir(), "db"), "--listen", "127.0.0.1:0")
	if code, body := get(t, m, "/api/v1/status"); code != 200 {
		t.Errorf("GET /api/v1/status on --listen: %d %s", code, body)
	}
	logged := log.String()
	for _, want := range []string{"level=WARN", "--listen is deprecated", "--admin-listen", "--public-listen"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %q:\n%s", want, logged)
		}
	}
}

// TestExposedAdminRefusedBeforeStart: an admin listener off loopback
// without a token is refused with exit status 2, naming the two ways out,
// before the database is created.
func TestExposedAdminRefusedBeforeStart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	for _, flag := range []string{"--admin-listen", "--listen"} {
		code, stderr, _ := child(t, 30*time.Second, "run", "--db", db, flag, "0.0.0.0:0")
		if code != 2 || !strings.Contains(stderr, "--public-listen") || !strings.Contains(stderr, "--admin-token-file") {
			t.Errorf("%s 0.0.0.0:0: exit %d, %s; want 2 and a message naming --public-listen and --admin-token-file", flag, code, stderr)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("%s 0.0.0.0:0: the database was created (%v)", flag, err)
		}
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.3.4.5:1": true, "[::1]:8080": true, "localhost:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "192.0.2.1:80": false,
		"[2001:db8::1]:80": false, "example.com:80": false, "localhost.example.com:80": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
