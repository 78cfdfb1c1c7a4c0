package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
)

// TestMetricsPassPromtool: a live /metrics, with sites, a named counter, a
// missing file and API requests answered, passes `promtool check metrics`
// (Prometheus's own lint: no type in a name, a _total on every counter,
// help on every metric), and carries the build and the API's answer times.
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := start(t, time.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0",
		"--format", "vhost_combined", "--site-field", "%v", "--window-end", "log", "--counter", "post=GET /posts/{n}",
		filepath.Join(root, "testdata", "vhosts.log"), filepath.Join(dir, "missing.log"))
	// Lines read are counted before lines parsed (ingest.Core.ApplyLines):
	// the wait is for the figure the test reads.
	poll.Until(t, "the sample's lines parsed", func() bool { return m.pipeline().core.Parsed() == 60 })
	for _, path := range []string{"/api/v1/stats", "/api/v1/series", "/api/v1/counters/post?key=1", "/nope"} {
		get(t, m, path)
	}
	// The tailer looks for the missing path on its own, not before the
	// other file's lines are parsed: the wait is for it too.
	missing := regexp.MustCompile(`(?m)^logtally_file_missing\{path=".*missing\.log"\} 1$`)
	var code int
	var body string
	poll.Until(t, "/metrics to say the missing file", func() bool {
		code, body = get(t, m, "/metrics")
		return code != 200 || missing.MatchString(body)
	})
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	t.Run("promtool", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool not installed (Debian's prometheus package), skipping the lint of /metrics")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body + "\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out.String())
		}
	})
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^logtally_build_info\{commit="[^"]+",goversion="go1[^"]*",version="[^"]+"\} 1$`),
		regexp.MustCompile(`(?m)^logtally_api_request_duration_seconds_count\{route="/api/v1/stats"\} 1$`),
		regexp.MustCompile(`(?m)^logtally_lines_total\{result="parsed"\} 60$`),
		regexp.MustCompile(`(?m)^logtally_lines_rejected_total\{reason="line does not match format"\} 0$`),
		regexp.MustCompile(`(?m)^logtally_named_count_lines_total\{counter="post"\} 27$`),
		missing,
	} {
		if !want.MatchString(body) {
			t.Errorf("/metrics has no line matching %s", want)
		}
	}
	if strings.Contains(body, `=""`) {
		t.Errorf("/metrics has an empty label:\n%s", grepLines(body, `=""`))
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
