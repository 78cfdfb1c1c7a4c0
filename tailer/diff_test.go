package tailer

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nxadm/tail"
)

// TestDifferentialNxadmTail runs github.com/nxadm/tail (Follow and ReOpen,
// that is tail -F, with CompleteLines) and this package's Tailer side by
// side on the same rotations, while the writer goes on writing. The Tailer
// must deliver every line exactly once; what nxadm/tail delivered is only
// logged, for it depends on how its goroutines were scheduled: it is the
// evidence for following files by descriptor and fingerprint rather than by
// path and notification.
//
// The writer does not wait for either reader before a rotation, as a web
// server does not. Between writes it steps the Tailer, and gives nxadm/tail
// a short while to catch up.
func TestDifferentialNxadmTail(t *testing.T) {
	scenarios := []struct {
		name string
		// rotate writes the log at path through w, rotating it on the way.
		rotate func(t *testing.T, path string, w *diffWriter)
	}{
		{"rename and reopen while the writer still appends", func(t *testing.T, path string, w *diffWriter) {
			f := w.create(path)
			w.write(f, 1000, true)
			w.write(f, 1000, false)
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			for range 10 {
				w.write(f, 100, true) // nginx before it gets USR1
			}
			f.Close()
			f = w.create(path)
			defer f.Close()
			for range 10 {
				w.write(f, 100, true)
			}
		}},
		{"copytruncate", func(t *testing.T, path string, w *diffWriter) {
			f := w.create(path)
			defer f.Close()
			w.write(f, 1000, true)
			w.write(f, 1000, false)
			copyTruncate(t, path, nil)
			for range 10 {
				w.write(f, 100, true)
			}
		}},
		{"deleted and re-created", func(t *testing.T, path string, w *diffWriter) {
			f := w.create(path)
			w.write(f, 1000, true)
			w.write(f, 1000, false)
			f.Close()
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			f = w.create(path)
			defer f.Close()
			for range 10 {
				w.write(f, 100, true)
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "access.log")
			w := &diffWriter{t: t, path: path}
			sc.rotate(t, path, w)
			w.r.waitFor(w.n)
			w.r.step() // a duplicate would show by now
			w.r.s.check(t, lines(0, w.n))
			w.nx.wait(w.n, 500*time.Millisecond) // a last chance
			got, dup := w.nx.delivered(w.n)
			t.Logf("%d lines written; logtally's Tailer delivered %d; nxadm/tail delivered %d of them (%d lost) and %d twice",
				w.n, w.r.s.count(), got, w.n-got, dup)
		})
	}
}

// diffWriter writes numbered lines to a log that both tailers follow; they
// start on the file it creates first.
type diffWriter struct {
	t    *testing.T
	path string
	n    int // lines written
	r    *run
	nx   *sink // what nxadm/tail delivered
}

func (w *diffWriter) create(path string) *os.File {
	w.t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		w.t.Fatal(err)
	}
	if w.r == nil {
		w.write(f, 1, false) // the Tailer's first pass has an identity to find
		w.r = follow(w.t, testConfig, newSink(), path)
		w.nx = followNxadm(w.t, path)
	}
	return f
}

// write appends n lines to f; if pause, it then steps the Tailer and waits
// a little for nxadm/tail to catch up.
func (w *diffWriter) write(f *os.File, n int, pause bool) {
	w.t.Helper()
	write(w.t, f, lines(w.n, w.n+n))
	w.n += n
	if pause {
		w.r.step()
		w.nx.wait(w.n, 50*time.Millisecond)
	}
}

// followNxadm follows path with nxadm/tail into a sink of its own.
func followNxadm(t *testing.T, path string) *sink {
	t.Helper()
	tl, err := tail.TailFile(path, tail.Config{Follow: true, ReOpen: true, MustExist: true, CompleteLines: true,
		Logger: tail.DiscardingLogger})
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for l := range tl.Lines {
			if l.Err == nil {
				s.take(Chunk{Data: []byte(l.Text + "\n")})
			}
		}
	}()
	t.Cleanup(func() {
		tl.Stop()
		tl.Cleanup()
		<-done
	})
	return s
}

// delivered returns how many of the first n lines s has, and how many of
// them it has more than once.
func (s *sink) delivered(n int) (got, twice int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range lines(0, n) {
		if c := s.lines[l]; c > 0 {
			got++
			if c > 1 {
				twice++
			}
		}
	}
	return got, twice
}
