package tailer

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/waker"
)

// TestTruncatedAndRewrittenWithTheSameFirstLine: the log is truncated and
// written again from a first line identical to the old one (a generator
// restarted, or an operator's `head -1 access.log > access.log`), past the
// offset read so far. The first line cannot tell the new content from the
// old: the tailer must see that the content before its offset changed, and
// read the file again from its start.
func TestTruncatedAndRewrittenWithTheSameFirstLine(t *testing.T) {
	tests := []struct {
		name string
		// rewrite truncates and rewrites the log, stepping the tailer
		// where the scenario lets it look.
		rewrite func(t *testing.T, r *run, f *os.File, content []string)
	}{
		{"between two passes", func(t *testing.T, r *run, f *os.File, content []string) {
			if err := f.Truncate(0); err != nil {
				t.Fatal(err)
			}
			write(t, f, content)
		}},
		{"the truncation seen, then rewritten past the offset", func(t *testing.T, r *run, f *os.File, content []string) {
			if err := f.Truncate(0); err != nil {
				t.Fatal(err)
			}
			r.step()
			write(t, f, content)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, s, r, f := followWriting(t) // lines 0 to 99, read
			content := append(lines(0, 1), lines(500, 700)...)
			tt.rewrite(t, r, f, content)
			r.waitFor(100 + len(content))
			r.step()
			want := append(lines(0, 100), content...)
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, l := range want {
				n := 1
				if l == want[0] {
					n = 2 // the first line of both contents
				}
				if s.lines[l] != n {
					t.Errorf("line %q arrived %d times, want %d", l, s.lines[l], n)
				}
			}
			if s.total != len(want) {
				t.Errorf("got %d lines, want %d", s.total, len(want))
			}
		})
	}
}

// TestAppendIsNotARewrite: a file that only grows is never taken for a
// rewritten one, however its writes fall between the passes (the check of
// the bytes before the offset must not misfire on partial lines).
func TestAppendIsNotARewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := newSink()
	r := follow(t, testConfig, s, path)
	all := lines(0, 300)
	for i, l := range all {
		// Half a line, a pass, the rest: the offset stops mid-write.
		f.WriteString(l[:len(l)/2])
		if i%7 == 0 {
			r.step()
		}
		f.WriteString(l[len(l)/2:] + "\n")
		if i%5 == 0 {
			r.step()
		}
	}
	r.waitFor(len(all))
	r.step()
	s.check(t, all)
}

// TestTruncationIsReported: a truncation is logged with the path and the
// fix, at most once every ProblemLogInterval, and Files says when it was and
// how far the file had been read.
func TestTruncationIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	appendFile(t, path, lines(0, 10))
	var log logBuffer
	clk := newFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	w := new(waker.Test)
	s := newSink()
	r := start(t, testConfig, Deps{Waker: w, Now: clk.now, Logger: slog.New(slog.NewTextHandler(&log, nil))}, s, path)
	r.waker = w
	r.waitFor(10)
	size := int64(len(strings.Join(lines(0, 10), "\n")) + 1)
	truncate := func(from int) {
		t.Helper()
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		r.step()
		appendFile(t, path, lines(from, from+10))
		r.waitFor(from + 10)
	}
	truncate(10)
	want := `msg="file truncated; reading it again from its start" path=` + path + ` read=` + itoa(size)
	if n := log.count(want); n != 1 {
		t.Errorf("logged %d times %s, want once\n%s", n, want, log.buf.String())
	}
	if !strings.Contains(log.buf.String(), "fix=") {
		t.Errorf("the warning gives no fix:\n%s", log.buf.String())
	}
	files := r.tl.Files()
	if want := "truncated at 2026-11-21T12:00:00Z after " + itoa(size) + " bytes were read: read again from its start"; len(files) != 1 || files[0].Error != want || files[0].State != "following" {
		t.Errorf("Files = %+v, want %s following with the error %q", files, path, want)
	}
	clk.add(ProblemLogInterval / 2)
	truncate(20)
	if n := log.count("file truncated"); n != 1 {
		t.Errorf("logged %d truncations within %s, want 1", n, ProblemLogInterval)
	}
	clk.add(ProblemLogInterval / 2)
	truncate(30)
	if n := log.count("file truncated"); n != 2 {
		t.Errorf("logged %d truncations after %s, want 2", n, ProblemLogInterval)
	}
	s.check(t, lines(0, 40))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
