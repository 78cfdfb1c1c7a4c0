package tailer

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/waker"
)

// nonRegular is a path of each kind of file that is not a regular one, and
// what an error about it must say.
type nonRegular struct {
	name, path, kind string
}

// nonRegulars makes a named pipe and a directory in a temp dir, and names
// /dev/zero, the device that never ends. A test that hangs on the pipe (an
// open of a FIFO for reading waits for a writer) is let go at cleanup by a
// writer that opens and closes it.
func nonRegulars(t *testing.T) []nonRegular {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "access.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	sub := filepath.Join(dir, "logs")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return []nonRegular{
		{"FIFO", fifo, "is a named pipe (FIFO)"},
		{"/dev/zero", "/dev/zero", "is a character device"},
		{"directory", sub, "is a directory"},
	}
}

// within runs f and fails the test if it has not returned within d: what
// must not hang is run where it cannot hang the test.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s has not returned after %s", what, d)
	}
}

// TestCheckNonRegular: following or replaying a FIFO, a device or a
// directory is refused at once, with an error that names the path, what it
// is, and what to do.
func TestCheckNonRegular(t *testing.T) {
	for _, nr := range nonRegulars(t) {
		for name, check := range map[string]func([]string) error{"follow": CheckFollowed, "replay": CheckReplayed} {
			t.Run(name+" "+nr.name, func(t *testing.T) {
				var err error
				within(t, 5*time.Second, "the check", func() { err = check([]string{nr.path}) })
				if err == nil || !strings.Contains(err.Error(), nr.path+" "+nr.kind) {
					t.Fatalf("error %v, want one saying %s %s", err, nr.path, nr.kind)
				}
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("error %v is not ErrNotRegular", err)
				}
				if !strings.Contains(err.Error(), ": ") || len(err.Error()) < len(nr.path+nr.kind)+20 {
					t.Errorf("error %q says what is wrong, not what to do", err)
				}
			})
		}
	}
}

// TestReplayNonRegular: Replay of a FIFO, a device or a directory ends at
// once with ErrNotRegular; nothing is read from it.
func TestReplayNonRegular(t *testing.T) {
	for _, nr := range nonRegulars(t) {
		t.Run(nr.name, func(t *testing.T) {
			var err error
			within(t, 5*time.Second, "Replay", func() {
				err = (&Reader{}).Replay(context.Background(), []string{nr.path}, newSink().positions, make(chan Chunk, 16))
			})
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), nr.path) {
				t.Errorf("Replay(%s) = %v, want ErrNotRegular naming the path", nr.path, err)
			}
		})
	}
}

// TestReplayStopsWhenCancelled: a replay of a huge file with no newline in
// it (nothing is ever sent) still stops as soon as its context is done, as
// on SIGTERM.
func TestReplayStopsWhenCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a first line, then 64 GiB of zeros without a newline\n")
	if err := f.Truncate(64 << 30); err != nil { // sparse: no disk used
		t.Skipf("no sparse file here: %v", err)
	}
	f.Close()
	r := &Reader{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Replay(ctx, []string{path}, newSink().positions, make(chan Chunk, 1<<10)) }()
	deadline := time.Now().Add(10 * time.Second)
	for r.Bytes.Load() < 64<<20 { // well into the file
		if time.Now().After(deadline) {
			t.Fatalf("read %d bytes in 10 s", r.Bytes.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Replay = %v, want context.Canceled", err)
		}
	case <-timer.C:
		t.Fatalf("Replay still reading 1 s after its context was cancelled (%d bytes read)", r.Bytes.Load())
	}
}

// TestFollowNonRegular: a followed path that is a FIFO (with or without a
// writer), a device or a directory is reported as unreadable, with what it
// is, and warned about once with the fix; the tailer never blocks on it, and
// stops within a second of its context's end.
func TestFollowNonRegular(t *testing.T) {
	for _, nr := range nonRegulars(t) {
		t.Run(nr.name, func(t *testing.T) {
			if nr.name == "FIFO" {
				// A writer holds the pipe open, as a server logging to it
				// would: an open for reading then succeeds at once.
				w, err := os.OpenFile(nr.path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				w.WriteString("a line that must not be read\n")
			}
			var log logBuffer
			wk := new(waker.Test)
			s := newSink()
			r := start(t, testConfig, Deps{Waker: wk, Logger: slog.New(slog.NewTextHandler(&log, nil))}, s, nr.path)
			r.waker = wk
			within(t, 5*time.Second, "a pass", func() { r.step(); r.step() })
			files := r.tl.Files()
			if len(files) != 1 || files[0].State != Unreadable || !strings.Contains(files[0].Error, nr.path+" "+nr.kind) {
				t.Errorf("Files = %+v, want %s unreadable: %s", files, nr.path, nr.kind)
			}
			if n := log.count(`msg="cannot read file" path=` + nr.path); n != 1 {
				t.Errorf("warned %d times, want once:\n%s", n, log.buf.String())
			}
			if !strings.Contains(log.buf.String(), "regular file") {
				t.Errorf("the warning does not say what to do:\n%s", log.buf.String())
			}
			within(t, time.Second, "stopping the tailer", r.stop)
			if n := s.count(); n != 0 {
				t.Errorf("%d lines read from %s", n, nr.name)
			}
		})
	}
}
