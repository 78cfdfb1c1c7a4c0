package tailer

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/waker"
)

// logBuffer is a log the test reads while the tailer writes it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// fakeClock is a clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time       { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration)  { c.ns.Add(int64(d)) }
func newFakeClock(t time.Time) *fakeClock { c := &fakeClock{}; c.ns.Store(t.UnixNano()); return c }
func stateOf(files []FileStatus) map[string]string {
	m := map[string]string{}
	for _, f := range files {
		m[f.Path] = f.State
	}
	return m
}

// TestShellExpandedGlobIsHinted: the FILE arguments of an unquoted glob,
// as the shell expanded it (access.log access.log.1 access.log.2), lose a
// match at the next rotation; the warning says to quote the glob.
func TestShellExpandedGlobIsHinted(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "access.log")
	paths := []string{base, base + ".1", base + ".2"}
	for i, p := range paths {
		if err := os.WriteFile(p, []byte("line of file "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log logBuffer
	w := new(waker.Test)
	r := start(t, testConfig, Deps{Waker: w, Logger: slog.New(slog.NewTextHandler(&log, nil))}, newSink(), paths...)
	r.waker = w
	r.step()
	if err := os.Remove(paths[2]); err != nil { // logrotate drops the oldest copy
		t.Fatal(err)
	}
	r.step()
	want := `msg="no file matches" path=` + paths[2] + ` fix="it is named as a rotated copy of ` + base +
		`, also given: if the shell expanded an unquoted glob into these FILE arguments, quote it ('` + base +
		`*') so that logtally matches it again as the files rotate (` + base + ` alone is followed with its rotated copies)"`
	if n := log.count(want); n != 1 {
		t.Errorf("logged %d times %s, want once; the log:\n%s", n, want, log.buf.String())
	}
}

// TestMissingPathIsReported: a path or glob that matches nothing is in
// Files as missing, warned about at the first re-scan and then at most once
// every ProblemLogInterval while it stays missing, and leaves Files once a
// file appears.
func TestMissingPathIsReported(t *testing.T) {
	dir := t.TempDir()
	path, glob := filepath.Join(dir, "acess.log"), filepath.Join(dir, "other*.log")
	var log logBuffer
	clk := newFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	w := new(waker.Test)
	s := newSink()
	r := start(t, testConfig, Deps{Waker: w, Now: clk.now, Logger: slog.New(slog.NewTextHandler(&log, nil))}, s, path, glob)
	r.waker = w
	r.step()
	if got := stateOf(r.tl.Files()); len(got) != 2 || got[path] != Missing || got[glob] != Missing {
		t.Fatalf("Files = %+v, want %s and %s missing", r.tl.Files(), path, glob)
	}
	fixes := []string{`msg="no file matches" path=` + path + ` fix="check the path; the file is read as soon as it appears"`,
		`msg="no file matches" path=` + glob + ` fix="check the pattern; files are read as soon as one matches"`}
	for _, fix := range fixes {
		if n := log.count(fix); n != 1 {
			t.Errorf("logged %d times %s, want once\n%s", n, fix, log.buf.String())
		}
	}
	for range 3 { // re-scans within the interval: no more warnings
		clk.add(ProblemLogInterval / 4)
		r.step()
	}
	if n := log.count("no file matches"); n != 2 {
		t.Errorf("%d warnings within %s, want 2 (one per path)", n, ProblemLogInterval)
	}
	clk.add(ProblemLogInterval / 4)
	r.step()
	if n := log.count("no file matches"); n != 4 {
		t.Errorf("%d warnings after %s, want 4 (again for each path)", n, ProblemLogInterval)
	}

	appendFile(t, path, lines(0, 3))
	clk.add(time.Second) // a re-scan is due, whether or not a file-system event came
	r.waitFor(3)
	r.step()
	if got := stateOf(r.tl.Files()); len(got) != 2 || got[path] != "following" || got[glob] != Missing {
		t.Errorf("Files = %+v, want %s following and %s still missing", r.tl.Files(), path, glob)
	}
	if n := log.count(`msg=found path=` + path + ` was=missing`); n != 1 {
		t.Errorf("the file's arrival logged %d times, want once\n%s", n, log.buf.String())
	}
}

// TestUnreadableFileIsReported: a matched file that cannot be opened is in
// Files as unreadable with the reason, warned about with the fix, and read
// once it can be.
func TestUnreadableFileIsReported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 2))
	var log logBuffer
	var denied atomic.Bool
	denied.Store(true)
	open := func(name string) (*os.File, error) {
		if denied.Load() {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
		}
		return os.Open(name)
	}
	w := new(waker.Test)
	s := newSink()
	r := start(t, testConfig, Deps{Waker: w, Logger: slog.New(slog.NewTextHandler(&log, nil)), open: open}, s, filepath.Join(dir, "*.log"))
	r.waker = w
	r.step()
	files := r.tl.Files()
	if len(files) != 1 || files[0].Path != path || files[0].State != Unreadable || files[0].Error != "open "+path+": permission denied" {
		t.Fatalf("Files = %+v, want %s unreadable: permission denied", files, path)
	}
	if want := `msg="cannot read file" path=` + path + ` err="open ` + path + `: permission denied" fix=`; log.count(want) != 1 {
		t.Errorf("log lacks %s\n%s", want, log.buf.String())
	}
	r.step()
	if n := log.count("cannot read file"); n != 1 {
		t.Errorf("warned %d times in the interval, want once", n)
	}
	denied.Store(false)
	r.waitFor(2)
	r.step()
	if got := stateOf(r.tl.Files()); len(got) != 1 || got[path] != "following" {
		t.Errorf("Files = %+v once readable, want %s following", r.tl.Files(), path)
	}
}

// TestUnreadableFileAsAUser is the same with a real permission, where the
// test is not root.
func TestUnreadableFileAsAUser(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file; TestUnreadableFileIsReported stands in a failing open")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 2))
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	s := newSink()
	r := follow(t, testConfig, s, filepath.Join(dir, "*.log"))
	r.step()
	if got := stateOf(r.tl.Files()); got[path] != Unreadable {
		t.Errorf("Files = %+v, want %s unreadable", r.tl.Files(), path)
	}
}

// TestOffsetAfterRestartIsTheReadPosition: a file read to its end before a
// restart shows its committed offset, and no lag, from the first pass, not
// offset 0 until its next line.
func TestOffsetAfterRestartIsTheReadPosition(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 10))
	s := newSink()
	r := follow(t, testConfig, s, path)
	r.waitFor(10)
	r.stop()

	s2 := newSink()
	s2.pos = s.pos // what the first life committed
	r = follow(t, testConfig, s2, path)
	r.step()
	files := r.tl.Files()
	fi, _ := os.Stat(path)
	if len(files) != 1 || files[0].Offset != fi.Size() || files[0].Size != fi.Size() {
		t.Errorf("Files = %+v after a restart, want offset = size = %d", files, fi.Size())
	}
	if n := s2.count(); n != 0 {
		t.Errorf("%d lines read again", n)
	}
}

// TestRotatedFileIsReportedUnderItsNewName: once access.log is renamed to
// access.log.1 and a new access.log is created, Files lists the old file as
// access.log.1 (rotated) and the new one as access.log, not the old file
// under the name of its successor.
func TestRotatedFileIsReportedUnderItsNewName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 5))
	s := newSink()
	r := follow(t, testConfig, s, path)
	r.waitFor(5)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, lines(5, 8))
	r.waitFor(8)
	r.step()
	r.step()
	got := stateOf(r.tl.Files())
	if len(got) != 2 || got[path+".1"] != "rotated" || got[path] != "following" {
		t.Errorf("Files = %+v, want %s rotated and %s following", r.tl.Files(), path+".1", path)
	}
}
