package storage

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFileErr: deleting the open file, or putting another in its place, is
// noticed. Before, nothing noticed it: commits went on into a file that no
// one could open again, and /readyz said ready.
func TestFileErr(t *testing.T) {
	for _, tt := range []struct {
		name string
		do   func(t *testing.T, path string)
		want string
	}{
		{"deleted", func(t *testing.T, path string) { os.Remove(path) }, "it was deleted"},
		{"deleted, and a new file made", func(t *testing.T, path string) {
			os.Remove(path)
			os.WriteFile(path, nil, 0o600)
		}, "it was replaced by another file"},
		{"another file renamed over it", func(t *testing.T, path string) {
			other := path + ".new"
			os.WriteFile(other, nil, 0o600)
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "it was replaced by another file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t, Config{})
			if err := s.FileErr(); err != nil {
				t.Fatalf("before: %v", err)
			}
			tt.do(t, s.cfg.Path)
			err := s.FileErr()
			if !errors.Is(err, ErrFileGone) || !strings.Contains(err.Error(), s.cfg.Path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FileErr = %v, want ErrFileGone naming the file and %q", err, tt.want)
			}
		})
	}
}

// syncBuffer is a log destination that the test reads while a goroutine
// writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// looks is a context that tells the test each time WatchFile looks at it,
// which it does once per pass of its loop, before it waits for the next
// tick: after three looks it has checked the file twice. So the test knows
// that checks were made, rather than sleeps and hopes they were.
type looks struct {
	context.Context
	looked chan struct{}
}

func (l looks) Done() <-chan struct{} {
	select {
	case l.looked <- struct{}{}:
	default: // the test is not counting now
	}
	return l.Context.Done()
}

// TestWatchFileLogsOnce: nothing is logged while the file is in place;
// once it is deleted, the log says it once, with the path and the fix.
func TestWatchFileLogsOnce(t *testing.T) {
	s := mustOpen(t, Config{})
	var out syncBuffer
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := looks{base, make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { s.WatchFile(ctx, time.Millisecond, slog.New(slog.NewTextHandler(&out, nil))); close(done) }()
	for range 3 {
		select {
		case <-ctx.looked:
		case <-done:
			t.Fatalf("WatchFile stopped with the file in place, logging: %s", out.String())
		}
	}
	if out.String() != "" {
		t.Fatalf("logged with the file in place: %s", out.String())
	}
	os.Remove(s.cfg.Path)
	select {
	case <-done: // it logged and stopped watching
	case <-time.After(10 * time.Second):
		t.Fatal("WatchFile did not notice the file was deleted")
	}
	log := out.String()
	if strings.Count(log, "\n") != 1 || !strings.Contains(log, "path="+s.cfg.Path) || !strings.Contains(log, "restore the file from a backup") {
		t.Errorf("log: %s", log)
	}
}

// TestSecondOpenSaysInUse: a second store on a file in use is refused
// within about a second, saying that another process has the file (and,
// on Linux, which). bbolt's lock is a flock, held by an open file, so two
// opens in one process conflict as two processes do. Before, the error was
// bbolt's "timeout".
func TestSecondOpenSaysInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logtally.db")
	mustOpen(t, Config{Path: path})
	began := time.Now()
	second, err := Open(Config{Path: path}, nil)
	if err == nil {
		second.Close()
		t.Fatal("a second Open of a file in use succeeded")
	}
	if took := time.Since(began); took > 1500*time.Millisecond {
		t.Errorf("refused after %s, want about a second", took)
	}
	want := "open " + path + ": database file is in use by another process"
	if !errors.Is(err, ErrLocked) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("second Open: %v\nwant ErrLocked: %s", err, want)
	}
	if _, statErr := os.Stat("/proc/locks"); statErr == nil && !strings.Contains(err.Error(), "(pid "+strconv.Itoa(os.Getpid())+")") {
		t.Errorf("second Open: %v, want the pid of the process that holds the file", err)
	}
	if err := Check(path); !errors.Is(err, ErrLocked) {
		t.Errorf("Check of a file in use: %v, want ErrLocked", err)
	}
}
