package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
)

// TestNonRegularInputIsRefused: `run` or `replay` of a FIFO, a device that
// never ends (/dev/zero) or a directory is refused at once, with an error
// that names the path, says what it is and what to do. Before, a FIFO hung
// start-up (an open for reading waits for a writer) and replay of /dev/zero
// never ended.
func TestNonRegularInputIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "access.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // lets go of an open that hangs, if one does
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	inputs := []struct{ name, path, kind, fix string }{
		{"FIFO", fifo, "is a named pipe (FIFO)", "regular files"},
		{"/dev/zero", "/dev/zero", "is a character device", "regular files"},
		{"directory", dir, "is a directory", "name the"},
	}
	for _, in := range inputs {
		for _, command := range []string{"run", "replay"} {
			t.Run(command+" "+in.name, func(t *testing.T) {
				m := NewMain()
				m.Stdout, m.Stderr = io.Discard, io.Discard
				args := []string{command, "--db", filepath.Join(t.TempDir(), "db"), in.path}
				if command == "run" {
					args = append(args[:1], append([]string{"--admin-listen", "127.0.0.1:0"}, args[1:]...)...)
				}
				var err error
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err = m.ParseFlags(args); err == nil {
						err = m.Run(context.Background())
					}
					m.Close()
				}()
				timer := time.NewTimer(5 * time.Second)
				defer timer.Stop()
				select {
				case <-done:
				case <-timer.C:
					t.Fatalf("logtally %s %s has not returned after 5 s", command, in.path)
				}
				if err == nil || !strings.Contains(err.Error(), in.path+" "+in.kind) || !strings.Contains(err.Error(), in.fix) {
					t.Errorf("logtally %s %s: %v, want an error saying it %s and what to do (%q)", command, in.path, err, in.kind, in.fix)
				}
			})
		}
	}
}

// TestReplayStopsOnSIGTERM: a replay that reads for long without sending a
// line (64 GiB with no newline: a device copied to a file, say) stops within
// a second of SIGTERM. Not parallel: what it claims is a time, which the
// load of other tests would stretch.
func TestReplayStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.log")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a first line, then zeros without a newline\n")
	if err := f.Truncate(64 << 30); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=replay --db "+filepath.Join(dir, "db")+" "+huge)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	poll.Until(t, "the replay to open the file", func() bool { return opened(cmd.Process.Pid, huge) })
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	if stopProcess(cmd.Process, syscall.SIGTERM, exited, time.Second) {
		t.Fatalf("replay still running 1 s after SIGTERM\n%s", stderr.String())
	}
}

// opened reports whether process pid has path open.
func opened(pid int, path string) bool {
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, _ := os.ReadDir(fds)
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}
