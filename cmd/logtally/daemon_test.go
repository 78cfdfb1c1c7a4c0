package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/tally"
)

func TestFlagsFromEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"LOGTALLY_DB": "/tmp/from-env.db", "LOGTALLY_MAX_SKEW": "30s", "LOGTALLY_ADMIN_LISTEN": "127.0.0.1:9999"}
	m := NewMain()
	m.Stderr = io.Discard
	m.Getenv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := m.ParseFlags([]string{"run", "--admin-listen", "127.0.0.1:7777"}); err != nil {
		t.Fatal(err)
	}
	if m.run().Store.Path != "/tmp/from-env.db" || m.run().Window.MaxSkew != 30*time.Second {
		t.Errorf("from the environment: db %q, max-skew %s", m.run().Store.Path, m.run().Window.MaxSkew)
	}
	if m.run().serve.AdminListen != "127.0.0.1:7777" {
		t.Errorf("listen = %q: the command line must win over the environment", m.run().serve.AdminListen)
	}

	env["LOGTALLY_WINDOW"] = "ten minutes"
	m = NewMain()
	m.Stderr = io.Discard
	m.Getenv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := m.ParseFlags([]string{"run"}); err == nil || !strings.Contains(err.Error(), "LOGTALLY_WINDOW") {
		t.Errorf("bad environment value: err = %v, want one naming LOGTALLY_WINDOW", err)
	}
}

func TestBadInputIsReportedBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "secret.log")
	os.WriteFile(unreadable, []byte("x\n"), 0o000)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"run", "--no-such-flag"}, "no-such-flag"},
		{"bad format", []string{"run", "--format", "$remote_addr only"}, "--format"},
		{"bad duration", []string{"run", "--window", "ten"}, "window"},
		{"bad log level", []string{"run", "--log-level", "loud"}, "--log-level"},
		{"missing directory", []string{"run", filepath.Join(dir, "nope", "access.log")}, "no such file"},
		{"a directory", []string{"run", dir}, "is a directory"},
		{"bad glob", []string{"run", filepath.Join(dir, "[.log")}, "syntax error in pattern"},
		{"replay without files", []string{"replay"}, "no FILE"},
	}
	if os.Geteuid() != 0 { // root reads anything
		tests = append(tests, struct {
			name string
			args []string
			want string
		}{"unreadable file", []string{"run", unreadable}, "permission denied"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMain()
			m.Stderr = io.Discard
			m.Getenv = func(string) (string, bool) { return "", false }
			err := m.ParseFlags(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseFlags(%q) = %v, want an error about %q", tt.args, err, tt.want)
			}
		})
	}
	// A file that does not exist yet, in an existing directory, is fine.
	m := NewMain()
	m.Stderr = io.Discard
	if err := m.ParseFlags([]string{"run", filepath.Join(dir, "later.log")}); err != nil {
		t.Errorf("not yet created file: %v", err)
	}
}

func TestHelpListsEveryFlagWithDefaultAndEnvironment(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := NewMain()
	m.Stderr = &out
	if err := m.ParseFlags([]string{"run", "--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"--db", "(default logtally.db)", "$LOGTALLY_DB", "--cache-max-age", "$LOGTALLY_CORS_ORIGIN",
		"--max-skew", "--log-format", "--tz", "--max-line"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestMetricsStatusAndReadiness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	appendLines(t, log,
		line("192.0.2.1", clk.At(-time.Minute), "GET /a HTTP/1.1", 200, browser),
		"not a log line",
		line("192.0.2.2", clk.At(-time.Minute), "GET /b HTTP/1.1", 200, browser))
	m := NewMain()
	m.Now = clk.Now
	m.Stdout, m.Stderr = io.Discard, io.Discard
	if err := m.ParseFlags([]string{"run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0",
		"--poll-interval", "5ms", "--flush-interval", "10ms", log}); err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	m.run().wrapStore = func(s ingest.Committer) ingest.Committer { return &failingStore{s, &failing} }
	if err := m.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	poll.Until(t, "the lines", func() bool { return m.pipeline().Lines() == 3 && m.pipeline().Commits() > 0 })

	_, body := get(t, m, "/metrics")
	families, err := new(expfmt.TextParser).TextToMetricFamilies(strings.NewReader(body + "\n"))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	lines := map[string]float64{}
	for _, mf := range families["logtally_lines_total"].GetMetric() {
		key := ""
		for _, l := range mf.GetLabel() {
			key += l.GetValue() + "/"
		}
		lines[key] = mf.GetCounter().GetValue()
	}
	if lines["parsed/"] != 2 || lines["rejected/"] != 1 {
		t.Errorf("logtally_lines_total = %v", lines)
	}
	rejected := families["logtally_lines_rejected_total"].GetMetric()
	for _, m := range rejected {
		if m.GetLabel()[0].GetValue() == "line does not match format" && m.GetCounter().GetValue() != 1 {
			t.Errorf("logtally_lines_rejected_total{reason=%q} = %v, want 1", m.GetLabel()[0].GetValue(), m.GetCounter().GetValue())
		}
	}
	for _, name := range []string{"logtally_bytes_read_total", "logtally_commit_duration_seconds", "logtally_window_visitors",
		"logtally_window_pageviews", "logtally_file_lag_bytes", "logtally_store_ready"} {
		if families[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	_, body = get(t, m, "/api/v1/status")
	var st struct {
		Files []struct {
			Path, State string
			LagBytes    int64 `json:"lag_bytes"`
		}
		Lines   struct{ Read, Rejected int64 }
		Samples []struct{ Line string } `json:"rejected_samples"`
		Store   struct{ State string }
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Files) != 1 || st.Files[0].Path != log || st.Files[0].LagBytes != 0 || st.Lines.Read != 3 ||
		st.Lines.Rejected != 1 || len(st.Samples) != 1 || st.Samples[0].Line != "not a log line" || st.Store.State != "ok" {
		t.Errorf("status = %s", body)
	}

	// The disk fails: /readyz turns 503 with the reason, and back once it heals.
	failing.Store(true)
	appendLines(t, log, line("192.0.2.3", clk.At(-time.Minute), "GET /c HTTP/1.1", 200, browser))
	poll.Until(t, "readyz to fail", func() bool { code, _ := get(t, m, "/readyz"); return code == 503 })
	if _, body := get(t, m, "/readyz"); !strings.Contains(body, "store not writable") {
		t.Errorf("readyz body %s", body)
	}
	failing.Store(false)
	poll.Until(t, "readyz to recover", func() bool { code, _ := get(t, m, "/readyz"); return code == 200 })
}

// TestDebugListen serves the pprof profiles on their own address, and only
// when asked.
func TestDebugListen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, io.Discard
	if err := m.ParseFlags([]string{"run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0",
		"--debug-listen", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	resp, err := http.Get("http://" + m.DebugAddr() + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "heap profile") {
		t.Errorf("heap profile: %d %.80s", resp.StatusCode, body)
	}
	if code, _ := get(t, m, "/debug/pprof/heap"); code != 404 {
		t.Errorf("the API answers /debug/pprof/heap with %d, want 404", code)
	}

	m2 := NewMain()
	m2.Stdout, m2.Stderr = io.Discard, io.Discard
	if err := m2.ParseFlags([]string{"run", "--db", filepath.Join(dir, "db2"), "--admin-listen", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := m2.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m2.Close() })
	if m2.DebugAddr() != "" {
		t.Errorf("profiles served at %s without --debug-listen", m2.DebugAddr())
	}
}

type failingStore struct {
	ingest.Committer
	failing *atomic.Bool
}

func (f *failingStore) Commit(bs ...*tally.Batch) error {
	if f.failing.Load() {
		return errors.New("write: no space left on device")
	}
	return f.Committer.Commit(bs...)
}

// TestSIGTERMDuringIngest stops the real program with SIGTERM while lines are
// being written, starts it again, and requires exact counts at the end.
func TestSIGTERMDuringIngest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	appendLines(t, log)
	args := "--db " + db + " --poll-interval 5ms " + log
	stop := func(d *daemon) {
		if err := d.stopWithin(syscall.SIGTERM, 10*time.Second); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.logTail())
		}
	}
	const total = 3000
	write := func(from, to int) {
		for i := from; i < to; i += 100 {
			var b strings.Builder
			for j := i; j < min(i+100, to); j++ {
				fmt.Fprintf(&b, "%s\n", line(fmt.Sprintf("192.0.2.%d", j%200), time.Now().Format("02/Jan/2006:15:04:05 -0700"),
					fmt.Sprintf("GET /p%d HTTP/1.1", j%13), 200, browser))
			}
			appendLines(t, log, strings.TrimSuffix(b.String(), "\n"))
			time.Sleep(2 * time.Millisecond) // a steady writer, so that SIGTERM lands mid-stream
		}
	}

	d := startDaemon(t, args)
	write(0, total/2)
	stop(d) // lines may be waiting in the file, in the tailer, in the batch
	write(total/2, total)
	d = startDaemon(t, args)
	// The window was rebuilt from what the first life stored, and this life
	// read the rest: the live count is every line, once.
	poll.Until(t, "every line counted", func() bool {
		resp, err := http.Get(d.base() + "/api/v1/stats")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct{ Requests int64 }
		json.NewDecoder(resp.Body).Decode(&st)
		return st.Requests == total
	})
	stop(d)

	if got := storedRequests(t, db); got != total {
		t.Errorf("stored requests = %d, want %d", got, total)
	}
}
