package tailer

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/logtally/logtally/internal/waker"
)

// sink stands in for the pipeline: it counts every line it receives and
// commits each chunk's position at once.
type sink struct {
	mu      sync.Mutex
	lines   map[string]int
	total   int
	skipped int
	pos     map[string]int64
	order   []string       // lines in the order they arrived
	pattern map[string]int // the Pattern of the chunk each line came in
	changed chan struct{}  // closed, and replaced, when a chunk arrives
}

func newSink() *sink {
	return &sink{lines: map[string]int{}, pos: map[string]int64{}, pattern: map[string]int{}, changed: make(chan struct{})}
}

func (s *sink) positions(id string) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.pos[id]
	return off, ok, nil
}

func (s *sink) take(c Chunk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range strings.SplitAfter(string(c.Data), "\n") {
		if l != "" {
			s.lines[strings.TrimSuffix(l, "\n")]++
			s.order = append(s.order, strings.TrimSuffix(l, "\n"))
			s.pattern[strings.TrimSuffix(l, "\n")] = c.Pattern
			s.total++
		}
	}
	s.skipped += c.Skipped
	s.pos[c.File] = c.Offset
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// waitFor waits until n lines have arrived, woken by each chunk: for a
// tailer woken by file-system events alone, with no test driving its
// passes.
func (s *sink) waitFor(t *testing.T, n int) {
	t.Helper()
	if !s.wait(n, 20*time.Second) {
		t.Fatalf("got %d lines, want %d", s.count(), n)
	}
}

// wait waits until n lines have arrived, or for at most d, and reports
// whether they did.
func (s *sink) wait(n int, d time.Duration) bool {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		total, changed := s.total, s.changed
		s.mu.Unlock()
		if total >= n {
			return true
		}
		select {
		case <-changed:
		case <-timeout.C:
			return false
		}
	}
}

// check reports lines that did not arrive exactly once, and extra lines.
func (s *sink) check(t *testing.T, want []string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	wanted := map[string]bool{}
	bad := 0
	for _, l := range want {
		wanted[l] = true
		if n := s.lines[l]; n != 1 && bad < 5 {
			t.Errorf("line %q arrived %d times, want once", l, n)
			bad++
		}
	}
	for l, n := range s.lines {
		if !wanted[l] && bad < 5 {
			t.Errorf("unexpected line %q (%d times)", l, n)
			bad++
		}
	}
	if s.total != len(want) {
		t.Errorf("got %d lines, want %d", s.total, len(want))
	}
}

// testConfig re-scans on every pass, so that a pass the test waits for has
// looked at every file on disk.
var testConfig = Config{Rescan: time.Nanosecond, IdleGrace: 30 * time.Second}

// run is a Tailer whose passes the test drives, sending to a sink.
type run struct {
	t      *testing.T
	tl     *Tailer
	s      *sink
	waker  *waker.Test
	out    chan Chunk
	synced chan struct{}
	stop   func()
}

// syncID marks the chunk that step sends through the tailer's channel
// after the tailer's own: once the sink has it, it has all before it.
const syncID = "sync"

// follow runs a Tailer over patterns into s until run.stop is called (or
// the test ends). Between passes it waits for the test's step, a
// file-system event or Rescan.
func follow(t *testing.T, cfg Config, s *sink, patterns ...string) *run {
	t.Helper()
	w := new(waker.Test)
	r := start(t, cfg, Deps{Waker: w}, s, patterns...)
	r.waker = w
	return r
}

// start runs a Tailer with deps over patterns into s until run.stop is
// called (or the test ends).
func start(t *testing.T, cfg Config, deps Deps, s *sink, patterns ...string) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{t: t, s: s, out: make(chan Chunk, 4), synced: make(chan struct{})}
	r.tl = New(cfg, patterns, s.positions, r.out, deps)
	errc := make(chan error, 1)
	go func() { errc <- r.tl.Run(ctx); close(r.out) }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range r.out {
			if c.File == syncID {
				r.synced <- struct{}{}
				continue
			}
			s.take(c)
		}
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("Run: %v", err)
			}
			<-done
		})
	}
	t.Cleanup(r.stop)
	return r
}

// step returns once the tailer has made a whole pass (a re-scan and a
// poll of every open file, with testConfig) that began after step was
// called, and the sink has taken everything that pass sent. What has not
// arrived by then would not arrive without a change on disk.
func (r *run) step() {
	r.t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	select {
	case <-r.waker.Next():
	case <-timeout.C:
		r.t.Fatal("the tailer made no pass in 10 s")
	}
	r.out <- Chunk{File: syncID}
	<-r.synced
}

// waitFor steps the tailer until n lines have arrived.
func (r *run) waitFor(n int) {
	r.t.Helper()
	for range 50 {
		if r.s.count() >= n {
			return
		}
		r.step()
		// The sink counts on its own goroutine: give it the chunks the
		// pass sent before asking for another pass.
		if r.s.wait(n, 100*time.Millisecond) {
			return
		}
	}
	r.t.Fatalf("got %d lines after 50 passes, want %d", r.s.count(), n)
}

func lines(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("192.0.2.1 line %05d", i))
	}
	return out
}

func write(t *testing.T, f *os.File, ls []string) {
	t.Helper()
	for _, l := range ls {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func appendFile(t *testing.T, path string, ls []string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write(t, f, ls)
}

func gzipFile(t *testing.T, path string) {
	t.Helper()
	gzipCopy(t, path, path+".gz")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// gzipCopy writes a compressed copy of src to dst, as logrotate's compress.
func gzipCopy(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRenameRotationWriterKeepsWriting is logrotate's create rotation: the
// log is renamed, and the writer goes on appending to the renamed file for
// a while before it reopens the path (nginx on USR1), while the tailer
// makes pass after pass. Not a line may be lost.
func TestRenameRotationWriterKeepsWriting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	const n = 10_000
	all := lines(0, n)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	r := follow(t, testConfig, s, path)

	write(t, f, all[:1])
	r.waitFor(1) // the file is open: what follows is a rotation, not a start
	write(t, f, all[1:4000])
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	// The writer appends to the renamed file a few lines at a time, and
	// the tailer looks between every two writes.
	renamed := all[4000:7000]
	for i := 0; i < len(renamed); i += 15 {
		write(t, f, renamed[i:min(i+15, len(renamed))])
		if i%30 == 0 {
			r.step()
		}
	}
	f.Close()
	appendFile(t, path, all[7000:]) // reopened
	r.waitFor(n)
	r.step() // a duplicate would show by now
	s.check(t, all)
}

// TestCopyTruncate is logrotate's copytruncate: the log is copied to
// access.log.1 and truncated in place. The copy is found by fingerprint and
// finished, and the truncated file is read from its start.
func TestCopyTruncate(t *testing.T) {
	for _, polled := range []bool{false, true} {
		t.Run(map[bool]string{false: "copied before a poll", true: "polled before the copy"}[polled], func(t *testing.T) {
			path, s, r, f := followWriting(t)
			write(t, f, lines(100, 150))
			if polled {
				r.step()
			}
			copyTruncate(t, path, nil)
			write(t, f, lines(150, 250))
			r.waitFor(250)
			r.step()
			s.check(t, lines(0, 250))
		})
	}
}

// TestCopyTruncateLoss documents what copytruncate can lose: lines written
// after logrotate's copy and before its truncation are in neither file.
func TestCopyTruncateLoss(t *testing.T) {
	path, s, r, f := followWriting(t)
	copyTruncate(t, path, func() { write(t, f, lines(100, 110)) })
	write(t, f, lines(110, 200))
	r.waitFor(190)
	r.step()
	s.check(t, append(lines(0, 100), lines(110, 200)...))
}

// followWriting follows a log of 100 lines until they have arrived, and
// returns it open for appending, as its writer holds it.
func followWriting(t *testing.T) (path string, s *sink, r *run, f *os.File) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "access.log")
	appendFile(t, path, lines(0, 100))
	s = newSink()
	r = follow(t, testConfig, s, path)
	r.waitFor(100)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, s, r, f
}

// copyTruncate does what logrotate's copytruncate does, calling between
// (if not nil) after the copy and before the truncation.
func copyTruncate(t *testing.T, path string, between func()) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}

// TestRotationWhileStopped: the log was rotated (and the rotated file
// compressed) while logtally was not running. At start the rotated file is
// found by fingerprint and finished from its stored offset, and the new
// file is read from its start.
func TestRotationWhileStopped(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[compress], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "access.log")
			appendFile(t, path, lines(0, 100))
			s := newSink()
			r := follow(t, testConfig, s, path)
			r.waitFor(100)
			r.stop()

			appendFile(t, path, lines(100, 150))
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			if compress {
				gzipFile(t, path+".1")
			}
			appendFile(t, path, lines(150, 180))
			appendFile(t, path+".2", lines(1000, 1010)) // an old file never read: not ours
			age(t, path+".2")

			r = follow(t, testConfig, s, path)
			r.waitFor(180)
			r.step()
			s.check(t, lines(0, 180))
			s.mu.Lock()
			defer s.mu.Unlock()
			if got, want := s.order[100:], lines(100, 180); !slices.Equal(got, want) {
				t.Errorf("after the restart, lines came in this order:\n%v\nwant the rotated file's first:\n%v", got, want)
			}
		})
	}
}

// TestPartialLine: a line without its newline is not sent until it is
// completed, or until its file is rotated away (removed).
func TestPartialLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("first\nsecond, half")
	s := newSink()
	r := follow(t, testConfig, s, path)
	r.waitFor(1)
	r.step()
	if n := s.count(); n != 1 {
		t.Fatalf("got %d lines before the second was complete, want 1", n)
	}
	f.WriteString(" and the rest\nthird without newline")
	r.waitFor(2)
	os.Remove(path)
	r.waitFor(3)
	s.check(t, []string{"first", "second, half and the rest", "third without newline"})
}

// TestLongLine: a line over the maximum is skipped and counted as it
// streams past, never buffered whole.
func TestLongLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg := testConfig
	cfg.MaxLine = 1000
	s := newSink()
	r := follow(t, cfg, s, path)
	f.WriteString("before\n")
	r.waitFor(1)
	for range 10 { // a 5,000-byte line in pieces the tailer sees one by one
		f.WriteString(strings.Repeat("x", 500))
		r.step()
	}
	f.WriteString("\nafter\n")
	r.waitFor(2)
	r.step()
	s.check(t, []string{"before", "after"})
	if s.skipped != 1 {
		t.Errorf("skipped = %d, want 1", s.skipped)
	}
}

// TestDeletedAndRecreated: a removed log is read to its end and closed; a
// new file at its path is read from the start.
func TestDeletedAndRecreated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 10))
	s := newSink()
	r := follow(t, testConfig, s, path)
	r.waitFor(10)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r.step() // the removed file is closed
	if files := r.tl.Files(); len(files) != 1 || files[0].Path != path || files[0].State != Missing {
		t.Errorf("Files = %+v after the removal, want only %s missing", files, path)
	}
	appendFile(t, path, lines(10, 15))
	r.waitFor(15)
	r.step()
	s.check(t, lines(0, 15))
}

// TestGlobPicksUpNewFile: a file that starts to match a glob is followed.
func TestGlobPicksUpNewFile(t *testing.T) {
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "a.log"), lines(0, 10))
	s := newSink()
	r := follow(t, testConfig, s, filepath.Join(dir, "*.log"))
	r.waitFor(10)
	appendFile(t, filepath.Join(dir, "b.log"), lines(10, 20))
	appendFile(t, filepath.Join(dir, "b.txt"), lines(100, 110)) // not matched
	r.waitFor(20)
	appendFile(t, filepath.Join(dir, "a.log"), lines(20, 25))
	r.waitFor(25)
	r.step()
	s.check(t, lines(0, 25))
}

// TestGlobPicksUpNewFileOnEvent: with re-scans an hour apart, the
// file-system event alone brings a new file in. Polls go on as in
// production, for the event may come before the file's first line.
func TestGlobPicksUpNewFileOnEvent(t *testing.T) {
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "a.log"), lines(0, 10))
	cfg := testConfig
	cfg.Poll, cfg.Rescan = 5*time.Millisecond, time.Hour
	s := newSink()
	start(t, cfg, Deps{}, s, filepath.Join(dir, "*.log"))
	s.waitFor(t, 10)
	appendFile(t, filepath.Join(dir, "b.log"), lines(10, 20))
	s.waitFor(t, 20)
	s.check(t, lines(0, 20))
}

// TestIdleRotatedFileIsClosed: a renamed file is closed once it has not
// grown for the idle grace, measured on the injected clock.
func TestIdleRotatedFileIsClosed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 10))
	var mu sync.Mutex
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tl := New(testConfig, []string{path}, newSink().positions, nil, Deps{Now: clock})
	ctx := context.Background()
	send := func(Chunk) error { return nil }
	if err := tl.rescan(); err != nil {
		t.Fatal(err)
	}
	tl.pollAll(ctx, send)
	os.Rename(path, path+".1")
	tl.pollAll(ctx, send)
	if len(tl.files) != 1 || tl.files[0].state != rotated {
		t.Fatalf("%d files open right after the rename, want 1 rotated", len(tl.files))
	}
	mu.Lock()
	now = now.Add(DefaultIdleGrace)
	mu.Unlock()
	tl.pollAll(ctx, send)
	if len(tl.files) != 0 {
		t.Errorf("%d files open after the idle grace, want 0", len(tl.files))
	}
	if err := tl.rescan(); err != nil || len(tl.files) != 0 {
		t.Errorf("rescan reopened the finished file: %d open, err %v", len(tl.files), err)
	}
}

func TestIDSurvivesRenameAndGzip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	if _, err := ID(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ID of a missing file: %v", err)
	}
	os.WriteFile(path, []byte("first line wi"), 0o644)
	if _, err := ID(path); !errors.Is(err, ErrNoFingerprint) {
		t.Errorf("ID without a complete line: %v, want ErrNoFingerprint", err)
	}
	appendFile(t, path, []string{"th its end", "second"})
	want, err := ID(path)
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, []string{"third"})
	os.Rename(path, path+".1")
	if got, _ := ID(path + ".1"); got != want {
		t.Errorf("ID after growth and rename = %s, want %s", got, want)
	}
	gzipFile(t, path+".1")
	if got, _ := ID(path + ".1.gz"); got != want {
		t.Errorf("ID of the .gz = %s, want %s", got, want)
	}
	appendFile(t, path, []string{"other first line"})
	if got, _ := ID(path); got == want {
		t.Errorf("a new file has the old file's ID")
	}
}

// read replays path from offset with r and returns what it sent.
func read(t *testing.T, r *Reader, path string, offset int64) (data string, end int64, skipped int) {
	t.Helper()
	out := make(chan Chunk, 16)
	errc := make(chan error, 1)
	ends := make(chan int64, 1)
	go func() {
		end, err := r.Read(context.Background(), path, "id", offset, out)
		errc <- err
		ends <- end
		close(out)
	}()
	var sb strings.Builder
	var last int64
	for c := range out {
		sb.Write(c.Data)
		skipped += c.Skipped
		last = c.Offset
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if end = <-ends; last != end {
		t.Errorf("last chunk at %d, Read returned %d", last, end)
	}
	return sb.String(), end, skipped
}

func TestReadPlainAndResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(path, []byte("one\ntwo\nthree\npartial"), 0o644)
	if got, off, _ := read(t, &Reader{}, path, 0); got != "one\ntwo\nthree\n" || off != 14 {
		t.Fatalf("Read = %q at %d, want three lines at 14", got, off)
	}
	if got, off, _ := read(t, &Reader{}, path, 4); got != "two\nthree\n" || off != 14 {
		t.Fatalf("Read from 4 = %q at %d", got, off)
	}
}

func TestReadLargeSpansChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	line := strings.Repeat("x", 99) + "\n"
	want := strings.Repeat(line, 3*4096/len(line)+7)
	os.WriteFile(path, []byte(want), 0o644)
	r := &Reader{BufSize: 4096}
	got, off, _ := read(t, r, path, 0)
	if got != want || off != int64(len(want)) {
		t.Fatalf("Read lost or duplicated data: got %d bytes at %d, want %d", len(got), off, len(want))
	}
	if r.Bytes.Load() != int64(len(want)) {
		t.Errorf("Bytes = %d, want %d", r.Bytes.Load(), len(want))
	}
}

func TestReadLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(path, []byte("a\n"+strings.Repeat("x", 10_000)+"\nb\n"), 0o644)
	got, off, skipped := read(t, &Reader{BufSize: 1024, MaxLine: 2000}, path, 0)
	if got != "a\nb\n" || skipped != 1 || off != 10_005 {
		t.Errorf("Read = %q, %d skipped, at %d; want a and b, 1 skipped, at 10005", got, skipped, off)
	}
}

func TestReadGzip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log.1")
	os.WriteFile(path, []byte("one\ntwo\nthree"), 0o644)
	gzipFile(t, path)
	got, off, _ := read(t, &Reader{}, path+".gz", 4)
	if got != "two\nthree\n" || off != 13 {
		t.Fatalf("Read gz from 4 = %q at %d, want two and the unterminated three at 13", got, off)
	}
}

// TestReadReleased: a consumer that releases each chunk as soon as it has
// read it gets every line once, lines across chunks and a long line
// included, and the reader reads into the released buffers again.
func TestReadReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	var want strings.Builder
	for i := range 500 {
		fmt.Fprintf(&want, "%d %s\n", i, strings.Repeat("x", i%97))
		if i == 250 {
			want.WriteString(strings.Repeat("y", 3000) + "\n")
		}
	}
	os.WriteFile(path, []byte(want.String()), 0o644)
	out := make(chan Chunk)
	errc := make(chan error, 1)
	go func() {
		_, err := (&Reader{BufSize: 512, MaxLine: 1000}).Read(context.Background(), path, "id", 0, out)
		errc <- err
		close(out)
	}()
	var got strings.Builder
	bufs := map[*byte]bool{}
	chunks, skipped := 0, 0
	for c := range out {
		got.Write(c.Data)
		bufs[unsafe.SliceData(c.buf)] = true
		chunks++
		skipped += c.Skipped
		c.Release()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if wantLines := strings.Replace(want.String(), strings.Repeat("y", 3000)+"\n", "", 1); got.String() != wantLines || skipped != 1 {
		t.Errorf("read %d bytes, %d long lines skipped; want %d bytes, 1 skipped", got.Len(), skipped, len(wantLines))
	}
	if len(bufs) > 2 || chunks < 10 {
		t.Errorf("%d chunks in %d buffers, want them all in one or two", chunks, len(bufs))
	}
}

func BenchmarkRead(b *testing.B) {
	for _, release := range []bool{false, true} {
		b.Run(fmt.Sprintf("release=%v", release), func(b *testing.B) { benchRead(b, release) })
	}
}

// benchRead reads 100,000 lines; with release, the consumer releases
// each chunk, as replay does.
func benchRead(b *testing.B, release bool) {
	path := filepath.Join(b.TempDir(), "access.log")
	line := `192.0.2.1 - - [21/Nov/2026:12:00:00 +0000] "GET /docs/1 HTTP/1.1" 200 512 "-" "Mozilla/5.0"` + "\n"
	data := []byte(strings.Repeat(line, 100_000))
	os.WriteFile(path, data, 0o644)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var r Reader
	for b.Loop() {
		out := make(chan Chunk, 4)
		done := make(chan struct{})
		go func() {
			for c := range out {
				if release {
					c.Release()
				}
			}
			close(done)
		}()
		if _, err := r.Read(context.Background(), path, "id", 0, out); err != nil {
			b.Fatal(err)
		}
		close(out)
		<-done
	}
}

// TestRescanAndFiles: Rescan (what SIGHUP does) brings in a file whose
// directory did not exist at start, so no file-system event announces it and
// timed re-scans are an hour apart; Files then reports it.
func TestRescanAndFiles(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "later")
	cfg := testConfig
	cfg.Rescan = time.Hour
	s := newSink()
	r := follow(t, cfg, s, filepath.Join(sub, "*.log"))
	r.step() // the first scan found nothing

	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "a.log")
	appendFile(t, path, lines(0, 10))
	r.step()
	if n := s.count(); n != 0 {
		t.Fatalf("got %d lines before Rescan, want 0: a poll alone found the file", n)
	}
	r.tl.Rescan()
	s.waitFor(t, 10)
	r.step()
	s.check(t, lines(0, 10))
	files := r.tl.Files()
	if len(files) != 1 || files[0].Path != path || files[0].State != "following" ||
		files[0].Fingerprint == "" || files[0].Offset != files[0].Size || files[0].Size == 0 {
		t.Fatalf("Files = %+v, want %s following and read to its end", files, path)
	}
}

// replay runs Replay over paths with the committed positions of s, and
// takes what it sends into s.
func replay(t *testing.T, s *sink, paths ...string) error {
	t.Helper()
	out := make(chan Chunk, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range out {
			s.take(c)
		}
	}()
	err := (&Reader{BufSize: 64}).Replay(context.Background(), paths, s.positions, out)
	close(out)
	<-done
	return err
}

// TestReplayReadsEachFileOnce: a file named twice, or named with its
// compressed copy, is read once, in either order; an empty file is passed
// over.
func TestReplayReadsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 100))
	gzipCopy(t, path, path+".1.gz")
	empty := filepath.Join(dir, "empty.log")
	os.WriteFile(empty, nil, 0o644)
	for name, paths := range map[string][]string{
		"twice":          {path, path},
		"gzip first":     {path + ".1.gz", path, path + ".1.gz"},
		"plain first":    {path, path + ".1.gz"},
		"with an empty":  {empty, path, empty},
		"the gzip alone": {path + ".1.gz", path + ".1.gz"},
	} {
		t.Run(name, func(t *testing.T) {
			s := newSink()
			if err := replay(t, s, paths...); err != nil {
				t.Fatal(err)
			}
			s.check(t, lines(0, 100))
		})
	}
}

// TestReplayResumes: a replay starts each file at its committed position,
// so a second replay, or one of the compressed copy, reads nothing.
func TestReplayResumes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 50))
	s := newSink()
	if err := replay(t, s, path); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, lines(50, 60))
	if err := replay(t, s, path); err != nil {
		t.Fatal(err)
	}
	gzipFile(t, path)
	if err := replay(t, s, path+".gz"); err != nil {
		t.Fatal(err)
	}
	s.check(t, lines(0, 60))
}

// TestReplayPositionError: a position that cannot be read stops the replay
// with that error.
func TestReplayPositionError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	appendFile(t, path, lines(0, 5))
	errDisk := errors.New("disk on fire")
	failing := func(string) (int64, bool, error) { return 0, false, errDisk }
	err := (&Reader{}).Replay(context.Background(), []string{path}, failing, make(chan Chunk, 1))
	if !errors.Is(err, errDisk) {
		t.Errorf("Replay = %v, want %v", err, errDisk)
	}
}

// TestReplayOlderCompressedCopy: a .gz holding less of a file than was
// read of it already has nothing new, as a plain file that short has not.
func TestReplayOlderCompressedCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	appendFile(t, path, lines(0, 100))
	gzipCopy(t, path, path+".old.gz")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, lines(100, 110))
	os.WriteFile(path+".old.copy", data, 0o644)
	s := newSink()
	if err := replay(t, s, path, path+".old.gz", path+".old.copy"); err != nil {
		t.Fatal(err)
	}
	s.check(t, lines(0, 110))
}
