package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
)

type fileStatus struct {
	Path     string
	Offset   int64
	Size     int64
	LagBytes int64 `json:"lag_bytes"`
	State    string
}

func files(t *testing.T, m *Main) []fileStatus {
	t.Helper()
	_, body := get(t, m, "/api/v1/status")
	var st struct{ Files []fileStatus }
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("status %s: %v", body, err)
	}
	return st.Files
}

// TestMistypedPathIsReported: `run /tmp/acess.log` (a typo) shows the path
// as missing in the status and /metrics; /readyz stays ready unless
// --require-files asks otherwise.
func TestMistypedPathIsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	typo := filepath.Join(dir, "acess.log")
	appendLines(t, filepath.Join(dir, "access.log"))
	for _, require := range []bool{false, true} {
		args := []string{"run", "--db", filepath.Join(t.TempDir(), "db"), "--admin-listen", "127.0.0.1:0", typo}
		if require {
			args = append(args[:1], append([]string{"--require-files"}, args[1:]...)...)
		}
		m := start(t, time.Now, args...)
		poll.Until(t, "the first scan", func() bool { return len(files(t, m)) == 1 })
		if got := files(t, m); got[0].Path != typo || got[0].State != "missing" {
			t.Errorf("status files = %+v, want %s missing", got, typo)
		}
		if _, body := get(t, m, "/metrics"); !strings.Contains(body, `logtally_file_missing{path="`+typo+`"} 1`) {
			t.Errorf("/metrics lacks logtally_file_missing for %s", typo)
		}
		code, body := get(t, m, "/readyz")
		if !require && code != 200 {
			t.Errorf("readyz = %d %s without --require-files, want 200", code, body)
		}
		if want := `{"error":"not ready: no file matches ` + typo + ` (--require-files)"}`; require && (code != 503 || body != want) {
			t.Errorf("readyz = %d %s with --require-files, want 503 %s", code, body, want)
		}
		m.Close()
	}
}

// TestUnreadableGlobMatchIsNotReady: a file a followed glob matches and
// logtally cannot read (a path given alone is refused at start) is in the
// status as unreadable and makes /readyz 503 with the reason, without
// --require-files: its lines are lost until someone acts. Root reads any
// file, so as root the program runs as nobody.
func TestUnreadableGlobMatchIsNotReady(t *testing.T) {
	t.Parallel()
	bin, cred := unprivileged(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	readable, secret := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	appendLines(t, readable, line("192.0.2.1", time.Now().Format("02/Jan/2006:15:04:05 -0700"), "GET / HTTP/1.1", 200, browser))
	appendLines(t, secret, line("192.0.2.2", time.Now().Format("02/Jan/2006:15:04:05 -0700"), "GET / HTTP/1.1", 200, browser))
	os.Chmod(secret, 0o200) // its owner may write it, nobody may read it
	if cred == nil {
		os.Chmod(secret, 0)
	}
	d := startDaemonAs(t, bin, cred, "--db "+filepath.Join(dir, "db")+" "+filepath.Join(dir, "*.log"))
	poll.Until(t, "the status to list the unreadable file", func() bool {
		_, status := getURLBody(t, d.base()+"/api/v1/status")
		return strings.Contains(status, `{"path":"`+secret+`","fingerprint":"","offset":0,"size":0,"lag_bytes":0,"state":"unreadable","error":"open `+secret+`: permission denied"}`)
	})
	want := `{"error":"not ready: cannot read ` + secret + `: open ` + secret + `: permission denied"}`
	if code, body := getURLBody(t, d.base()+"/readyz"); code != 503 || body != want {
		t.Errorf("readyz = %d %s, want 503 %s", code, body, want)
	}
}

// getURLBody returns the status and body of GET url.
func getURLBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestNoFalseLagAfterRestart: restarted with nothing new in the log, the
// status shows the stored offset and no lag from the first second, not
// offset 0 and the file's size as lag until the next line.
func TestNoFalseLagAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	appendLines(t, log, line("192.0.2.1", clk.At(-time.Minute), "GET /a HTTP/1.1", 200, browser),
		line("192.0.2.2", clk.At(-time.Minute), "GET /b HTTP/1.1", 200, browser))
	args := []string{"run", "--db", db, "--admin-listen", "127.0.0.1:0", log}
	m := start(t, clk.Now, args...)
	poll.Until(t, "the lines", func() bool { return m.pipeline().Lines() == 2 })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = start(t, clk.Now, args...)
	poll.Until(t, "the first scan", func() bool { return len(files(t, m)) == 1 })
	f := files(t, m)[0]
	if f.Offset != f.Size || f.LagBytes != 0 || f.Size == 0 {
		t.Errorf("after a restart: %+v, want offset = size and no lag", f)
	}
	if _, body := get(t, m, "/metrics"); !strings.Contains(body, `logtally_file_lag_bytes{path="`+log+`"} 0`) {
		t.Errorf("/metrics: lag of %s is not 0", log)
	}
}

// TestCommonFormatCountsPageViews: `--format common` logs no user agent; its
// lines are page views by the other rules, not all crawlers'.
func TestCommonFormatCountsPageViews(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	appendLines(t, log,
		`192.0.2.1 - - [`+clk.At(-time.Minute)+`] "GET /a HTTP/1.1" 200 512`,
		`192.0.2.2 - - [`+clk.At(-time.Minute)+`] "GET /b HTTP/1.1" 200 512`,
		`192.0.2.2 - - [`+clk.At(-time.Minute)+`] "GET /b.css HTTP/1.1" 200 512`)
	m := start(t, clk.Now, "run", "--format", "common", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", log)
	poll.Until(t, "the lines", func() bool { return stats(t, m).Requests == 3 })
	if s := stats(t, m); s.Pageviews != 2 || s.Visitors != 2 {
		t.Errorf("stats = %+v, want 2 page views by 2 visitors", s)
	}
}
