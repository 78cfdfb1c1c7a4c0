package tailer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/waker"
)

// rotateNumbered is logrotate's numbered rotation of path, keeping keep
// copies: path.N (or path.N.gz) becomes path.N+1 (the last is replaced),
// then path becomes path.1. The caller creates the new path.
func rotateNumbered(t *testing.T, path string, keep int) {
	t.Helper()
	for n := keep - 1; n >= 1; n-- {
		for _, gz := range []string{"", ".gz"} {
			err := os.Rename(fmt.Sprintf("%s.%d%s", path, n, gz), fmt.Sprintf("%s.%d%s", path, n+1, gz))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
}

// compress replaces path with path.gz, keeping its modification time, as
// logrotate's compress and gzip itself do.
func compress(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	gzipFile(t, path)
	if err := os.Chtimes(path+".gz", fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// age gives path a modification time of two days ago: a file that was there
// long before logtally first read the log.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestRapidRenamesPlainPath follows a plain path (not a glob) while the log
// is rotated three times between two passes of the tailer, as a burst of
// rotations, or a tailer held up by a slow consumer, sees it. The files
// created and rotated away between two passes were never open under the
// followed name: they are read as rotated copies newer than what was read.
func TestRapidRenamesPlainPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 100))
	s := newSink()
	r := follow(t, testConfig, s, path)
	r.waitFor(100)
	next := 100
	for round := range 30 {
		rotateNumbered(t, path, 20)
		appendFile(t, path, lines(next, next+100))
		next += 100
		if round%3 == 2 {
			r.step()
		}
	}
	r.waitFor(next)
	r.step()
	s.check(t, lines(0, next))
}

// TestTwoRotationsWhileStopped: the log was rotated twice while logtally was
// stopped, so one whole file (the middle one) was never opened under the
// followed name. At start it is found among the rotated copies, newer than
// the file last read, and read from its start; the file last read is
// finished from its stored offset, and an archive from before logtally was
// started (older than anything it read) is left alone. Each naming scheme
// of logrotate and the common distributions is tried.
func TestTwoRotationsWhileStopped(t *testing.T) {
	tests := []struct {
		name string
		// rotate rotates path once, as the nth rotation (1 or 2).
		rotate func(t *testing.T, path string, nth int)
		// old is the suffix, after both rotations, of an archive from
		// before logtally was started.
		old string
	}{
		{"numbered (Debian)", func(t *testing.T, path string, _ int) {
			rotateNumbered(t, path, 14)
		}, ".3"},
		{"numbered, delaycompress", func(t *testing.T, path string, _ int) {
			rotateNumbered(t, path, 14)
			if _, err := os.Stat(path + ".2"); err == nil {
				compress(t, path+".2")
			}
		}, ".3.gz"},
		{"numbered, compress", func(t *testing.T, path string, _ int) {
			rotateNumbered(t, path, 14)
			compress(t, path+".1")
		}, ".3.gz"},
		{"dateext (Red Hat)", func(t *testing.T, path string, nth int) {
			os.Rename(path, fmt.Sprintf("%s-202611%02d", path, 19+nth))
		}, "-20261101"},
		{"dateext, compress", func(t *testing.T, path string, nth int) {
			rotated := fmt.Sprintf("%s-202611%02d", path, 19+nth)
			os.Rename(path, rotated)
			compress(t, rotated)
		}, "-20261101.gz"},
		{"dateformat .%Y-%m-%d", func(t *testing.T, path string, nth int) {
			os.Rename(path, fmt.Sprintf("%s.2026-11-%02d", path, 19+nth))
		}, ".2026-11-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "access.log")
			appendFile(t, path, lines(5000, 5010))
			age(t, path)
			tt.rotate(t, path, -18) // an archive from before logtally: never read
			appendFile(t, path, lines(0, 100))
			s := newSink()
			r := follow(t, testConfig, s, path)
			r.waitFor(100)
			r.stop()

			appendFile(t, path, lines(100, 150)) // after the stop, before the rotation
			tt.rotate(t, path, 1)
			appendFile(t, path, lines(150, 400)) // a whole file never opened
			tt.rotate(t, path, 2)
			appendFile(t, path, lines(400, 450))
			if _, err := os.Stat(path + tt.old); err != nil {
				t.Fatalf("the old archive is not at %s: %v", path+tt.old, err)
			}

			r = follow(t, testConfig, s, path)
			r.waitFor(450)
			r.step()
			s.check(t, lines(0, 450))
			s.mu.Lock()
			defer s.mu.Unlock()
			if got, want := s.order[100:], lines(100, 450); !slices.Equal(got, want) {
				t.Errorf("after the restart, lines came in this order:\n%v\nwant the oldest file's first", got)
			}
		})
	}
}

// memStreams keeps the starts of streams as the database does, for runs of
// a test to share.
type memStreams struct {
	mu    sync.Mutex
	since map[string]time.Time
	sets  int
}

func (m *memStreams) StreamSince(path string) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.since[path]
	return s, ok, nil
}

func (m *memStreams) SetStreamSince(path string, since time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.since == nil {
		m.since = make(map[string]time.Time)
	}
	m.since[path] = since
	m.sets++
	return nil
}

// TestRotatedAwayBeforeFirstCommit: logtally's first run read the log and
// was stopped before anything of it was committed (no position is known);
// the log was then rotated twice while it was stopped. The start of the
// stream, kept in Streams before its first line was read, tells the next
// run that both rotated files are the stream's, to read from their start,
// and that an archive from before the first run is not. The start is
// stored once: the files read after it do not move it.
func TestRotatedAwayBeforeFirstCommit(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "access.log")
			appendFile(t, path, lines(5000, 5010))
			age(t, path)
			rotateNumbered(t, path, 14) // an archive from before logtally: never read
			// Each file of the stream an hour apart, as the files of a log
			// rotated hourly are: a rotated file is then older than the
			// file at the path.
			hoursAgo := func(n int) {
				at := time.Now().Add(-time.Duration(n) * time.Hour)
				if err := os.Chtimes(path, at, at); err != nil {
					t.Fatal(err)
				}
			}
			appendFile(t, path, lines(0, 100))
			hoursAgo(3)
			streams := new(memStreams)
			followStreams := func(s *sink) *run {
				w := new(waker.Test)
				r := start(t, testConfig, Deps{Waker: w, Streams: streams}, s, path)
				r.waker = w
				return r
			}
			r := followStreams(newSink())
			r.waitFor(100)
			r.stop() // killed before its first commit

			appendFile(t, path, lines(100, 150))
			hoursAgo(2)
			rotateNumbered(t, path, 14)
			appendFile(t, path, lines(150, 400))
			hoursAgo(1)
			rotateNumbered(t, path, 14)
			if gz {
				compress(t, path+".1")
				compress(t, path+".2")
			}
			appendFile(t, path, lines(400, 450))

			s := newSink() // nothing committed: no position is known
			r = followStreams(s)
			r.waitFor(450)
			r.step()
			s.check(t, lines(0, 450))
			if streams.sets != 1 {
				t.Errorf("the stream's start was stored %d times, want once", streams.sets)
			}
		})
	}
}

// TestRotatedAwayBeforeFollowing: logtally's first run claimed the log at
// its start (Claim) but never opened it (a first start in fleet mode waits
// for the fleet database); the log was then rotated twice, by copytruncate
// and by a rename, and the copy compressed. The next run reads every line
// of the stream from the rotated files, and leaves the archive from before
// the claim alone.
func TestRotatedAwayBeforeFollowing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path+".3", lines(5000, 5010))
	age(t, path+".3") // an archive from before logtally: never read
	appendFile(t, path, lines(0, 100))
	streams := new(memStreams)
	glob := filepath.Join(dir, "*.other")
	if err := Claim([]string{path, glob, filepath.Join(dir, "missing.log")}, streams); err != nil {
		t.Fatal(err)
	}
	if _, ok := streams.since[path]; !ok || len(streams.since) != 1 {
		t.Fatalf("Claim stored %v, want the start of %s only", streams.since, path)
	}
	appendFile(t, path, lines(100, 150))
	copyTruncate(t, path, nil)
	appendFile(t, path, lines(150, 180))
	rotateNumbered(t, path, 14)
	compress(t, path+".2")
	appendFile(t, path, lines(180, 200))

	w := new(waker.Test)
	s := newSink()
	r := start(t, testConfig, Deps{Waker: w, Streams: streams}, s, path)
	r.waker = w
	r.waitFor(200)
	r.step()
	s.check(t, lines(0, 200))
	if err := Claim([]string{path}, streams); err != nil || streams.sets != 1 {
		t.Errorf("a claim of a stream with a start: %v, stored %d times, want once", err, streams.sets)
	}
}
