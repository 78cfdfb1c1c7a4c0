package status

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/live"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
	"github.com/logtally/logtally/window"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// failing fails every commit while fail is set, as a full disk would.
type failing struct {
	ingest.Committer
	fail atomic.Bool
}

func (f *failing) Commit(bs ...*tally.Batch) error {
	if f.fail.Load() {
		return errors.New("write: no space left on device")
	}
	return f.Committer.Commit(bs...)
}

// pipeline returns a live loop that has read two good lines and a bad one
// of file "f", into a real store behind store.
func pipeline(t *testing.T) (*live.Loop, *failing) {
	t.Helper()
	s, err := storage.Open(storage.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	format, err := parser.New("combined")
	if err != nil {
		t.Fatal(err)
	}
	classifier, err := classify.New(classify.DefaultConfig(), classify.Fixed{})
	if err != nil {
		t.Fatal(err)
	}
	store := &failing{Committer: s}
	p, err := live.New(live.Config{}, live.Deps{Deps: ingest.Deps{Format: format, Classifier: classifier, Now: func() time.Time { return t0 }},
		Window: window.New(window.DefaultConfig(), t0), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for i := range 2 {
		data = fmt.Appendf(data, "192.0.2.%d - - [%s] \"GET /a HTTP/1.1\" 200 10 \"-\" \"Firefox\"\n",
			i, t0.Format("02/Jan/2006:15:04:05 -0700"))
	}
	data = append(data, "not a log line\n"...)
	in := make(chan tailer.Chunk, 1)
	in <- tailer.Chunk{File: "f", Path: "access.log", Data: data, Offset: int64(len(data))}
	close(in)
	if err := p.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	return p, store
}

func TestStatus(t *testing.T) {
	p, _ := pipeline(t)
	files := []tailer.FileStatus{{Path: "access.log", Fingerprint: "f", Offset: 100, Size: 150, State: "following"}}
	r := New(Config{Version: "v1", Started: t0, DB: "test.db"}, Deps{Pipeline: p,
		Files: func() []tailer.FileStatus { return files }})
	st := r.Status()
	if st.Version != "v1" || !st.Started.Equal(t0) || st.UptimeSeconds <= 0 {
		t.Errorf("version %q, started %s, up %vs; want v1, %s and some", st.Version, st.Started, st.UptimeSeconds, t0)
	}
	if l := st.Lines; l.Read != 3 || l.Parsed != 2 || l.Rejected != 1 || l.ByReason["line does not match format"] != 1 ||
		l.BytesRead == 0 {
		t.Errorf("lines = %+v, want 3 read, 2 parsed, 1 rejected as not matching", l)
	}
	wantFile := api.FileStatus{Path: "access.log", Fingerprint: "f", Offset: 100, Size: 150, LagBytes: 50, State: "following"}
	if len(st.Files) != 1 || st.Files[0] != wantFile {
		t.Errorf("files = %+v, want %+v", st.Files, wantFile)
	}
	if s := st.Store; s.Path != "test.db" || s.State != "ok" || s.Error != "" || s.Commits != 1 || s.LastCommit.IsZero() {
		t.Errorf("store = %+v, want test.db, ok, one commit", s)
	}
	if len(st.Samples) != 1 || st.Samples[0].Line != "not a log line" || st.Samples[0].Reason != "line does not match format" {
		t.Errorf("samples = %+v, want the bad line", st.Samples)
	}
}

func TestReady(t *testing.T) {
	p, store := pipeline(t)
	var following atomic.Pointer[error]
	r := New(Config{}, Deps{Pipeline: p, Following: func() error {
		if err := following.Load(); err != nil {
			return *err
		}
		return nil
	}})
	if err := r.Ready(); err != nil {
		t.Errorf("Ready() = %v, want nil", err)
	}
	stopped := errors.New("too many open files")
	following.Store(&stopped)
	if err := r.Ready(); !errors.Is(err, stopped) || !strings.Contains(err.Error(), "following stopped") {
		t.Errorf("Ready() = %v, want following stopped: %v", err, stopped)
	}

	// Commits fail: not ready, and the status says why.
	store.fail.Store(true)
	in := make(chan tailer.Chunk, 1)
	in <- tailer.Chunk{File: "f", Data: []byte("x\n"), Offset: 1000}
	close(in)
	if err := p.Run(context.Background(), in); err == nil {
		t.Fatal("Run succeeded while commits fail")
	}
	if err := r.Ready(); err == nil || !strings.Contains(err.Error(), "store not writable") {
		t.Errorf("Ready() = %v, want store not writable", err)
	}
	if st := r.Status().Store; st.State != "failing" || !strings.Contains(st.Error, "no space left") {
		t.Errorf("store status = %+v, want failing with the store's error", st)
	}
}

func TestRegistry(t *testing.T) {
	p, _ := pipeline(t)
	files := []tailer.FileStatus{{Path: "access.log", Offset: 100, Size: 150}, {Path: "old.log", Offset: 90, Size: 80}}
	r := New(Config{}, Deps{Pipeline: p, Files: func() []tailer.FileStatus { return files }})
	families, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	lags := map[string]float64{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetName() == "logtally_file_lag_bytes" {
			for _, m := range f.GetMetric() {
				lags[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	for _, name := range []string{"go_goroutines", "logtally_lines_total", "logtally_commit_duration_seconds",
		"logtally_window_visitors", "logtally_store_ready", "logtally_file_lag_bytes"} {
		if !names[name] {
			t.Errorf("the registry lacks %s", name)
		}
	}
	if lags["access.log"] != 50 || lags["old.log"] != 0 {
		t.Errorf("file lags = %v, want access.log 50 and old.log 0", lags)
	}
}

// TestMissingAndUnreadableFiles: a path that matches nothing and a file that
// cannot be read are in the status with their state, in /metrics as
// logtally_file_missing and logtally_file_unreadable (not as lag); a file
// that cannot be read makes the daemon not ready, a missing one only with
// RequireFiles.
func TestMissingAndUnreadableFiles(t *testing.T) {
	p, _ := pipeline(t)
	files := []tailer.FileStatus{
		{Path: "/var/log/nginx/acess.log", State: tailer.Missing},
		{Path: "/var/log/nginx/secret.log", State: tailer.Unreadable, Error: "open /var/log/nginx/secret.log: permission denied"},
	}
	deps := Deps{Pipeline: p, Files: func() []tailer.FileStatus { return files }}
	r := New(Config{}, deps)
	got := r.Status().Files
	want := []api.FileStatus{{Path: "/var/log/nginx/acess.log", State: "missing"},
		{Path: "/var/log/nginx/secret.log", State: "unreadable", Error: "open /var/log/nginx/secret.log: permission denied"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("status files = %+v, want %+v", got, want)
	}
	families, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauges := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetName() == "path" {
				gauges[f.GetName()+" "+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	wantGauges := map[string]float64{"logtally_file_missing /var/log/nginx/acess.log": 1,
		"logtally_file_unreadable /var/log/nginx/secret.log": 1}
	if len(gauges) != 2 || gauges["logtally_file_missing /var/log/nginx/acess.log"] != 1 ||
		gauges["logtally_file_unreadable /var/log/nginx/secret.log"] != 1 {
		t.Errorf("gauges = %v, want %v", gauges, wantGauges)
	}
	unreadable := "cannot read /var/log/nginx/secret.log: open /var/log/nginx/secret.log: permission denied"
	if err := r.Ready(); err == nil || err.Error() != unreadable {
		t.Errorf("Ready() = %v without RequireFiles, want %q", err, unreadable)
	}
	r = New(Config{RequireFiles: true}, deps)
	if err := r.Ready(); err == nil || err.Error() != "no file matches /var/log/nginx/acess.log (--require-files)" {
		t.Errorf("Ready() = %v with RequireFiles", err)
	}
	files = files[1:]
	if err := r.Ready(); err == nil || err.Error() != unreadable {
		t.Errorf("Ready() = %v with RequireFiles and an unreadable file, want %q", err, unreadable)
	}
	files = []tailer.FileStatus{{Path: "/var/log/nginx/acess.log", State: tailer.Missing}}
	if err := New(Config{}, deps).Ready(); err != nil {
		t.Errorf("Ready() = %v with a missing file and no RequireFiles, want nil", err)
	}
}
