package tailer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/logtally/logtally/internal/waker"
)

// followReadSize is the most a followed file is read in one go.
const followReadSize = 256 << 10

// Deps are what a Tailer works with besides its Config. Zero fields take
// their production values.
type Deps struct {
	Logger *slog.Logger // discards if nil
	// Now is the clock that the idle grace and the re-scan interval are
	// measured on; time.Now if nil.
	Now func() time.Time
	// Waker says when to poll the open files again: every Config.Poll if
	// nil. File-system events and Rescan wake the tailer besides.
	Waker waker.Waker
	// Streams keeps where each plain path's stream starts across restarts
	// (see Tailer.since); with none, a run stopped before its first
	// commit leaves nothing to tell the files it read, rotated away while
	// it was stopped, from archives, and the next run passes them over.
	Streams Streams

	// open stands in for os.Open in tests: a failing file system, since
	// tests run as root read anything.
	open func(string) (*os.File, error)
}

// Tailer follows every file that its paths and globs match, and the rotated
// copies of those paths, and sends their complete lines.
//
// One goroutine does everything: it polls the open files in turn and
// re-matches the patterns from time to time. Files are held open by
// descriptor, so a renamed file is read to its end however it is named now;
// it is closed once it has not grown for the idle grace, or once it is
// removed (after reading what is left in it).
type Tailer struct {
	cfg      Config
	patterns []string
	out      chan<- Chunk
	log      *slog.Logger
	now      func() time.Time
	waker    waker.Waker

	files []*file
	// offsets tells where each identity resumes, and keeps a file reopened
	// under another name (a .gz of it, a copy) from being sent twice.
	offsets offsets
	// done holds files that were read to their end and closed, with their
	// size and modification time, so a re-scan does not open them again
	// unless they changed.
	done map[fileKey]doneState
	// since holds, for each plain path followed, the modification time of
	// the oldest file of its stream (the file at the path, or a rotated
	// copy) known to have been read: a rotated copy never read that is not
	// older than that was rotated away before logtally could open it.
	// It is loaded from Streams at Run's start and stored there whenever
	// it moves back, before the file that moved it is read.
	since   map[string]time.Time
	streams Streams

	// problems holds, by path, the patterns that match no file and the
	// files that cannot be opened, as of the last re-scan.
	problems map[string]*problem

	// warned says when each rate-limited warning was last logged.
	warned map[string]time.Time

	rescanNow chan struct{}
	status    atomic.Pointer[[]FileStatus]   // published after every poll
	openPath  func(string) (*os.File, error) // os.Open, or Deps.open
}

// problem is why nothing is read from a path: it matches no file, or the
// file cannot be opened. It is logged when it starts and then at most once
// every ProblemLogInterval while it lasts.
type problem struct {
	state  string // "missing" or "unreadable"
	err    error  // why a file is unreadable
	warned time.Time
}

// ProblemLogInterval is how often a path that stays missing or unreadable
// is logged again: each re-scan finds it, and once a re-scan is enough to
// fill a log.
const ProblemLogInterval = time.Minute

// FileStatus is what Files reports of one open file.
type FileStatus struct {
	Path        string
	Fingerprint string // "" until the file's first line is complete
	Offset      int64  // bytes sent to the consumer
	Size        int64
	// State is "following", "rotated" (read until idle or removed),
	// "waiting" (no first line yet), "missing" (a path or glob that
	// matches no file: Path is the pattern) or "unreadable" (a file that
	// cannot be opened: Error says why).
	State string
	// Error is why the file is unreadable; for a file being read, what
	// last went wrong with it (it was truncated).
	Error string
}

// Missing and Unreadable are the states of a path that nothing is read from.
const (
	Missing    = "missing"
	Unreadable = "unreadable"
)

type fileKey struct{ dev, ino uint64 }

type doneState struct {
	size  int64
	mtime time.Time
	// passed: a rotated copy never read, passed over as older than the
	// stream; looked at again if the stream turns out to be older.
	passed bool
}

// fileState is where a file is in its life, from being opened to being
// closed.
type fileState uint8

const (
	// waiting: the file has no complete first line yet, so no identity,
	// and nothing is read.
	waiting fileState = iota
	// following: the file is read as it grows; its path still names it.
	following
	// rotated: its path names another file, or none. The file is read
	// (identified first, if its first line came late) until it has not
	// grown for the idle grace, or until it is removed.
	rotated
	// finished: the file was read to its end, or is not to be read (a
	// rotated copy never read before, an unreadable file). It is closed, and
	// opened again only once its size or modification time changes.
	finished
	// duplicate: another name of a file already open. It is closed, and
	// looked at again on the next re-scan, for the other may be truncated
	// by then (copytruncate).
	duplicate
)

var stateNames = [...]string{waiting: "waiting", following: "following", rotated: "rotated",
	finished: "finished", duplicate: "duplicate"}

func (s fileState) String() string { return stateNames[s] }

// closed reports whether a file in state s is done with.
func (s fileState) closed() bool { return s >= finished }

// file is one file being followed. Its lineReader holds its identity ("" until
// its first line is complete) and how far it was read.
type file struct {
	lineReader
	f   *os.File
	key fileKey
	gz  bool
	// stream is the plain path this file is the log or a rotated copy of;
	// "" for a file a glob matched.
	stream   string
	sibling  bool // matched only as a possible rotated copy of stream
	passed   bool // a rotated copy never read and older than the stream
	state    fileState
	lastGrow time.Time
	// tail holds the last bytes read before split.off (up to tailSize):
	// each poll checks they are still there, which tells a file truncated
	// and written again past the offset from one that grew.
	tail []byte
	// rewritten is set when the file was truncated and written again: its
	// content is new, and is read from its start whatever the position of
	// its identity says.
	rewritten bool
	// truncated says when the file was last found truncated, and how far
	// it had been read, for Files.
	truncated    time.Time
	truncatedOff int64
}

// tailSize is how many bytes before the read offset are checked on every
// poll: more than a line's timestamp and client address, so that content
// written again is not taken for what was read unless that line is
// identical, at the same offset.
const tailSize = 128

// remember keeps the last bytes of c, which end at its offset, for the
// next poll to check. A skipped line's bytes are not kept, so after one the
// check covers only the lines after it.
func (fl *file) remember(c Chunk) {
	d := c.Data
	if c.Skipped > 0 || len(d) >= tailSize {
		fl.tail = append(fl.tail[:0], d[len(d)-min(len(d), tailSize):]...)
		return
	}
	fl.tail = append(fl.tail, d...)
	if n := len(fl.tail) - tailSize; n > 0 {
		fl.tail = append(fl.tail[:0], fl.tail[n:]...)
	}
}

// New returns a tailer of the files matching patterns (paths or globs).
// positions gives each file's committed offset; out receives the chunks.
func New(cfg Config, patterns []string, positions Positions, out chan<- Chunk, deps Deps) *Tailer {
	t := &Tailer{
		cfg: cfg.withDefaults(), patterns: patterns, out: out, log: deps.Logger, now: deps.Now, waker: deps.Waker, streams: deps.Streams,
		offsets: newOffsets(positions), done: make(map[fileKey]doneState), since: make(map[string]time.Time),
		problems: make(map[string]*problem), warned: make(map[string]time.Time),
		rescanNow: make(chan struct{}, 1), openPath: openRegular,
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.now == nil {
		t.now = time.Now
	}
	if deps.open != nil {
		t.openPath = deps.open
	}
	return t
}

// Rescan asks Run to match the paths and globs again now, as SIGHUP does.
// It never blocks.
func (t *Tailer) Rescan() {
	select {
	case t.rescanNow <- struct{}{}:
	default:
	}
}

// Files returns the open files as of the last poll. Any goroutine may call
// it; it never waits on Run.
func (t *Tailer) Files() []FileStatus {
	if p := t.status.Load(); p != nil {
		return *p
	}
	return nil
}

// publish records the open files, and the paths nothing is read from, for
// Files.
func (t *Tailer) publish() {
	out := make([]FileStatus, 0, len(t.files)+len(t.problems))
	for _, fl := range t.files {
		// The offset is the read position: from the first poll after a
		// restart it is the committed one, not 0 until a line arrives.
		st := FileStatus{Path: fl.path, Fingerprint: fl.id, Offset: fl.split.off, State: fl.state.String()}
		if fl.id == "" {
			st.State = waiting.String() // a rotated file may still wait for its first line
		}
		if fi, err := fl.f.Stat(); err == nil {
			st.Size = fi.Size()
		}
		if !fl.truncated.IsZero() {
			st.Error = fmt.Sprintf("truncated at %s after %d bytes were read: read again from its start",
				fl.truncated.UTC().Format(time.RFC3339), fl.truncatedOff)
		}
		out = append(out, st)
	}
	for _, p := range slices.Sorted(maps.Keys(t.problems)) {
		st := FileStatus{Path: p, State: t.problems[p].state}
		if err := t.problems[p].err; err != nil {
			st.Error = err.Error()
		}
		out = append(out, st)
	}
	t.status.Store(&out)
}

// report records what is wrong with path (nothing when state is ""), and
// logs it when it starts, when it changes, and then at most once every
// ProblemLogInterval.
func (t *Tailer) report(path, state string, err error) {
	p := t.problems[path]
	if state == "" {
		if p != nil {
			delete(t.problems, path)
			t.log.Info("found", "path", path, "was", p.state)
		}
		return
	}
	now := t.now()
	if p != nil && p.state == state && now.Sub(p.warned) < ProblemLogInterval {
		p.err = err
		return
	}
	t.problems[path] = &problem{state: state, err: err, warned: now}
	switch state {
	case Missing:
		fix := "check the path; the file is read as soon as it appears"
		if hasMeta(path) {
			fix = "check the pattern; files are read as soon as one matches"
		}
		t.log.Warn("no file matches", "path", path, "fix", fix)
	case Unreadable:
		fix := readFix
		var nr *NotRegularError
		switch {
		case errors.As(err, &nr) && nr.Mode.IsDir():
			fix = fmt.Sprintf(followDirFix, path)
		case errors.As(err, &nr):
			fix = followFix
		}
		t.log.Warn("cannot read file", "path", path, "err", err, "fix", fix)
	}
}

// Run follows the files until ctx is done. It returns nil then; it returns
// an error only if the positions cannot be read.
//
// Each pass polls every open file; it first matches the paths and globs
// again if a file-system event or Rescan asked for it, or if the re-scan
// interval has passed. Between passes Run waits for the waker.
func (t *Tailer) Run(ctx context.Context) error {
	if err := t.loadSince(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	events, watching := t.watch(ctx)
	defer func() {
		cancel()
		<-watching
		for _, fl := range t.files {
			fl.f.Close()
		}
		t.files = nil
	}()
	w := t.waker
	if w == nil {
		tick := time.NewTicker(t.cfg.Poll)
		defer tick.Stop()
		w = waker.Ticker{Ticker: tick}
	}
	send := func(c Chunk) error {
		select {
		case t.out <- c:
			t.offsets.sent[c.File] = c.Offset
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var scanned time.Time
	for scan := true; ; {
		if now := t.now(); scan || now.Sub(scanned) >= t.cfg.Rescan {
			if err := t.rescan(); err != nil {
				return err
			}
			scanned, scan = now, false
		}
		if err := t.pollAll(ctx, send); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		t.publish()
		select {
		case <-ctx.Done():
			return nil
		case <-w.Wake():
		case <-events:
			scan = true
		case <-t.rescanNow:
			scan = true
		}
	}
}

// watch watches the directories of the patterns and signals on wake when
// a file is created, renamed or removed in them, until ctx is done; then it
// closes done. It only shortens the wait: polling and re-scanning find
// everything anyway, so a watcher that cannot be set up is logged and done
// without.
func (t *Tailer) watch(ctx context.Context) (wake <-chan struct{}, done <-chan struct{}) {
	wakec, donec := make(chan struct{}, 1), make(chan struct{})
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.log.Warn("no file-system events; polling only", "err", err)
		close(donec)
		return wakec, donec
	}
	dirs := map[string]bool{}
	for _, p := range t.patterns {
		dir := filepath.Dir(p)
		if dirs[dir] || hasMeta(dir) {
			continue
		}
		dirs[dir] = true
		if err := w.Add(dir); err != nil {
			t.log.Warn("cannot watch directory; polling it", "dir", dir, "err", err)
		}
	}
	go func() {
		defer close(donec)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) {
					select {
					case wakec <- struct{}{}:
					default:
					}
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return wakec, donec
}

func hasMeta(path string) bool { return strings.ContainsAny(path, `*?[\`) }

// rescan matches the patterns again and opens the files not open yet. For
// a pattern that is a plain path it also looks at its rotated copies
// (path.1, path.1.gz, path-20261121, ...). It reads those known by
// fingerprint from their position: they are the rest of a file read
// before, renamed or compressed while logtally was not looking. It reads
// one never read from its start if it is named as a rotated copy and is not
// older than the oldest file of the path that was read (see unread): it was
// rotated away before logtally could open it.
func (t *Tailer) rescan() error {
	type match struct {
		path    string
		stream  string // the plain path it belongs to, if any
		sibling bool
		fi      os.FileInfo
		pattern int
	}
	var matches []match
	seen := map[string]bool{} // by path: whether it is a regular file
	notRegular := map[string]bool{}
	// add adds the regular files among paths to matches, and returns how
	// many there are, counting those added before.
	add := func(paths []string, stream string, sibling bool, pattern int) (regular int) {
		for _, p := range paths {
			if ok, done := seen[p]; done {
				if ok {
					regular++
				}
				continue
			}
			fi, err := os.Stat(p)
			seen[p] = err == nil && fi.Mode().IsRegular()
			if !seen[p] {
				continue
			}
			regular++
			matches = append(matches, match{p, stream, sibling, fi, pattern})
		}
		return regular
	}
	for i, p := range t.patterns {
		paths, err := filepath.Glob(p)
		if err != nil {
			t.log.Warn("bad pattern", "pattern", p, "err", err)
			continue
		}
		stream := p
		if hasMeta(p) {
			stream = ""
		}
		if add(paths, stream, false, i) > 0 {
			t.report(p, "", nil)
		} else if fi, err := os.Stat(p); err == nil && !hasMeta(p) {
			// A FIFO, a device or a directory at the path: nothing to read
			// by offset. (A glob's matches are its regular files.)
			t.report(p, Unreadable, &NotRegularError{Path: p, Mode: fi.Mode()})
			notRegular[p] = true
		} else {
			t.report(p, Missing, nil)
		}
	}
	for i, p := range t.patterns {
		if !hasMeta(p) {
			for _, suffix := range []string{".*", "-*"} {
				paths, _ := filepath.Glob(p + suffix)
				add(paths, p, true, i)
			}
		}
	}
	// Oldest first, so a rotated file is finished before its successor,
	// and the files read before are met before the copies never read.
	// Modification times are only as fine as the kernel's clock tick: a
	// tie is broken by name.
	slices.SortStableFunc(matches, func(a, b match) int {
		if c := a.fi.ModTime().Compare(b.fi.ModTime()); c != 0 {
			return c
		}
		return olderName(a.path, b.path)
	})
	// A file reported unreadable that no pattern matches any more is no
	// longer a problem.
	for p, pr := range t.problems {
		if pr.state == Unreadable && !seen[p] && !notRegular[p] {
			delete(t.problems, p)
		}
	}
	// Forget finished files that are gone, so done does not grow forever.
	present := make(map[fileKey]bool, len(matches))
	for _, m := range matches {
		present[keyOf(m.fi)] = true
	}
	for k := range t.done {
		if !present[k] {
			delete(t.done, k)
		}
	}
	for _, m := range matches {
		key := keyOf(m.fi)
		if fl := t.openFile(key); fl != nil {
			t.renamed(fl, m.path, m.fi)
			continue
		}
		if d, ok := t.done[key]; ok && d.size == m.fi.Size() && d.mtime.Equal(m.fi.ModTime()) {
			continue
		}
		if err := t.open(m.path, m.stream, m.sibling, m.pattern); err != nil {
			return err
		}
	}
	return nil
}

func keyOf(fi os.FileInfo) fileKey {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileKey{uint64(st.Dev), uint64(st.Ino)}
	}
	return fileKey{}
}

// openFile returns the open file with key, or nil.
func (t *Tailer) openFile(key fileKey) *file {
	for _, fl := range t.files {
		if fl.key == key {
			return fl
		}
	}
	return nil
}

// renamed gives fl the name path, which a re-scan found it under, once its
// own name no longer names it: a rotated access.log is reported as the
// access.log.1 it now is, not under the name of its successor.
func (t *Tailer) renamed(fl *file, path string, fi os.FileInfo) {
	if path == fl.path {
		return
	}
	if pi, err := os.Stat(fl.path); err == nil && os.SameFile(pi, fi) {
		return // still named by its path too (a hard link)
	}
	t.log.Debug("renamed", "from", fl.path, "to", path)
	fl.path = path
	if fl.state == following {
		fl.state = rotated // its old name is no longer its own
	}
}

// open opens the file at path, unless it is open already or was read to its
// end and has not changed since.
func (t *Tailer) open(path, stream string, sibling bool, pattern int) error {
	f, err := t.openPath(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.report(path, Unreadable, err)
		}
		return nil
	}
	if p := t.problems[path]; p != nil && p.state == Unreadable {
		t.report(path, "", nil)
	}
	// The file is known by what was opened, not by what the re-scan saw
	// at path a moment before: the log may have been rotated in between,
	// and a key taken from the other file would hide this one.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		t.log.Warn("stat", "path", path, "err", err)
		return nil
	}
	key := keyOf(fi)
	if d, ok := t.done[key]; t.openFile(key) != nil || ok && d.size == fi.Size() && d.mtime.Equal(fi.ModTime()) {
		f.Close()
		return nil
	}
	fl := &file{f: f, key: key, gz: isGzip(path), stream: stream, sibling: sibling, state: waiting, lastGrow: t.now(),
		lineReader: lineReader{path: path, split: splitter{max: t.cfg.MaxLine}, size: followReadSize, pattern: pattern}}
	err = t.identify(fl)
	if fl.state.closed() {
		t.finish(fl)
	} else {
		t.files = append(t.files, fl)
	}
	return err
}

// identify gives fl its identity and start offset once its first line is
// complete, and moves a waiting file on to following (or rotated, for a
// rotated copy). It finishes fl if it is a rotated copy never read before
// that does not belong to the stream (see unread), and marks it a duplicate
// if it is another name of a file already open.
func (t *Tailer) identify(fl *file) error {
	id, err := readID(fl.f, fl.gz)
	if errors.Is(err, ErrNoFingerprint) {
		if fl.sibling || fl.gz {
			fl.state = finished // a copy or a .gz does not grow a first line
		}
		return nil
	}
	if err != nil {
		t.log.Warn("fingerprint", "path", fl.path, "err", err)
		fl.state = finished
		return nil
	}
	for _, o := range t.files {
		if o != fl && o.id == id {
			fl.state = duplicate // the same file under two names: read it once
			return nil
		}
	}
	start, known, err := t.offsets.start(id)
	if err != nil {
		fl.state = finished
		return fmt.Errorf("position of %s: %w", fl.path, err)
	}
	if fl.rewritten {
		// The same first line, other content: the position is the old
		// content's.
		start, fl.rewritten = 0, false
	}
	if fl.sibling && !known {
		if !t.unread(fl) {
			fl.state, fl.passed = finished, true
			return nil
		}
		t.log.Info("reading a rotated file that was never read", "path", fl.path, "id", id,
			"why", "it was rotated away before logtally could open it (two rotations in a row, or while logtally was stopped)")
	}
	if fl.stream != "" && (known || !fl.sibling) {
		t.belongs(fl)
	}
	if !fl.gz {
		if fi, err := fl.f.Stat(); err == nil && fi.Size() < start {
			// Known, yet shorter than what was read of it: the content is
			// new (a truncated file written again from the same first line).
			t.log.Warn("file shorter than its position; reading from the start",
				"path", fl.path, "size", fi.Size(), "position", start)
			start = 0
		}
		if _, err := fl.f.Seek(start, io.SeekStart); err != nil {
			t.log.Warn("seek", "path", fl.path, "err", err)
			fl.state = finished
			return nil
		}
	}
	fl.id, fl.split = id, splitter{max: t.cfg.MaxLine, off: start}
	fl.tail = fl.tail[:0]
	if !fl.gz && start > 0 {
		// What is before the position now is taken for what was read: a
		// file rewritten while logtally was stopped cannot be told apart.
		n := min(start, tailSize)
		fl.tail = slices.Grow(fl.tail, int(n))[:n]
		if _, err := fl.f.ReadAt(fl.tail, start-n); err != nil {
			fl.tail = fl.tail[:0]
		}
	}
	if fl.state == waiting {
		fl.state = following
		if fl.sibling {
			fl.state = rotated // read until idle, as a file renamed while open
		}
	}
	t.log.Debug("following", "path", fl.path, "id", id, "offset", start)
	return nil
}

// finish closes fl and, unless it is a duplicate, remembers it as read.
func (t *Tailer) finish(fl *file) {
	if fi, err := fl.f.Stat(); err == nil && fl.state != duplicate {
		t.done[fl.key] = doneState{fi.Size(), fi.ModTime(), fl.passed}
	}
	fl.f.Close()
}

// unread reports whether fl, a rotated copy of its stream never read, is
// part of the stream that was rotated away before it could be read: it is
// named as logrotate names rotated copies, and it is not older than the
// oldest file of the stream known to have been read. An older one is an
// archive from before logtally followed the path, and is left alone.
//
// Modification times order the files of a stream: a rename keeps them, and
// so do logrotate's and gzip's compression. A rotated file stopped growing
// before its successor got its first line, so a file rotated away unread is
// no older than the last file read before it, which is no older than the
// oldest.
func (t *Tailer) unread(fl *file) bool {
	since, ok := t.since[fl.stream]
	if !ok || !rotatedName(fl.stream, fl.path) {
		return false
	}
	fi, err := fl.f.Stat()
	return err == nil && !fi.ModTime().Before(since)
}

// belongs records that fl, a file of its stream known to be read, is part of
// it: the stream is at least as old as fl. Copies passed over as older than
// the stream are looked at again if that makes it older.
func (t *Tailer) belongs(fl *file) {
	fi, err := fl.f.Stat()
	if err != nil {
		return
	}
	if since, ok := t.since[fl.stream]; ok && !fi.ModTime().Before(since) {
		return
	}
	t.since[fl.stream] = fi.ModTime()
	if t.streams != nil {
		// Before any line of fl is sent: a line counted is always of a
		// stream whose start a restart knows.
		if err := t.streams.SetStreamSince(fl.stream, fi.ModTime()); err != nil {
			t.log.Warn("cannot store where the log's stream starts", "path", fl.stream, "err", err,
				"risk", "if logtally stops before its next commit and the log is rotated meanwhile, the next run takes the rotated files for archives and does not read them")
		}
	}
	for k, d := range t.done {
		if d.passed {
			delete(t.done, k)
		}
	}
}

// loadSince loads, for each plain path followed, where its stream starts
// as Streams kept it.
func (t *Tailer) loadSince() error {
	if t.streams == nil {
		return nil
	}
	for _, p := range t.patterns {
		if hasMeta(p) {
			continue
		}
		since, ok, err := t.streams.StreamSince(p)
		if err != nil {
			return fmt.Errorf("start of the stream of %s: %w", p, err)
		}
		if cur, known := t.since[p]; ok && (!known || since.Before(cur)) {
			t.since[p] = since
		}
	}
	return nil
}

// rotatedName reports whether name is path as logrotate and the common
// distributions name its rotated copies: a number (access.log.1, Debian's
// default), or a date (access.log-20261121, Red Hat's dateext; or
// access.log.2026-11-21), each possibly compressed (.gz). Other names, such
// as access.log.old or a .bz2, are read only if known by fingerprint.
func rotatedName(path, name string) bool {
	suffix, ok := strings.CutPrefix(name, path)
	if !ok {
		return false
	}
	suffix = strings.TrimSuffix(suffix, ".gz")
	if len(suffix) < 2 || (suffix[0] != '.' && suffix[0] != '-') || suffix[1] < '0' || suffix[1] > '9' {
		return false
	}
	return strings.Trim(suffix[1:], "0123456789-_.") == ""
}

// olderName orders two names whose files have the same modification time,
// older first: a rotated copy (access.log.1) before the name it extends,
// and a higher number (access.log.2) before a lower one.
func olderName(a, b string) int {
	switch {
	case strings.HasPrefix(a, b):
		return -1
	case strings.HasPrefix(b, a):
		return 1
	}
	na, oka := rotationNumber(a)
	nb, okb := rotationNumber(b)
	if oka && okb && na.base == nb.base {
		return nb.n - na.n
	}
	return 0
}

type numbered struct {
	base string
	n    int
}

// rotationNumber splits access.log.2 (or access.log.2.gz) into access.log and
// 2. A long number is a date or a time (access.log.20261121), not a count.
func rotationNumber(name string) (numbered, bool) {
	name = strings.TrimSuffix(name, ".gz")
	i := strings.LastIndexByte(name, '.')
	if i < 0 || len(name)-i-1 > 6 {
		return numbered{}, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 {
		return numbered{}, false
	}
	return numbered{name[:i], n}, true
}

// pollAll reads what is new in every open file, and closes those done with.
func (t *Tailer) pollAll(ctx context.Context, send func(Chunk) error) error {
	kept := t.files[:0]
	var err error
	for _, fl := range t.files {
		if err == nil {
			err = t.poll(ctx, fl, send)
		}
		if fl.state.closed() {
			t.finish(fl)
		} else {
			kept = append(kept, fl)
		}
	}
	clear(t.files[len(kept):])
	t.files = kept
	return err
}

// poll reads what is new in fl and moves it on to its next state.
func (t *Tailer) poll(ctx context.Context, fl *file, send func(Chunk) error) error {
	if fl.gz {
		fl.state = finished // it does not grow: read once
		return t.readGzip(ctx, fl, send)
	}
	fi, err := fl.f.Stat()
	if err != nil {
		t.log.Warn("stat", "path", fl.path, "err", err)
		fl.state = finished
		return nil
	}
	if fl.id != "" {
		if how := t.truncated(fl, fi.Size()); how != "" {
			t.warn(fl.path, "truncated", "file truncated; reading it again from its start", "path", fl.path,
				"read", fl.split.off, "size", fi.Size(), "how", how,
				"fix", "if this is logrotate's copytruncate, prefer rotation by rename with a reopen: lines written between its copy and its truncation are lost")
			fl.truncated, fl.truncatedOff = t.now(), fl.split.off
			fl.id, fl.split, fl.tail, fl.rewritten = "", splitter{max: t.cfg.MaxLine}, fl.tail[:0], true
			if fl.state == following {
				fl.state = waiting
			}
		}
	}
	if fl.id == "" {
		if err := t.identify(fl); err != nil || fl.state.closed() {
			return err
		}
	}
	if fl.id != "" && fi.Size() > fl.split.consumed() {
		n, err := t.read(ctx, fl, fl.f, send)
		if err != nil {
			return err
		}
		if n > 0 {
			fl.lastGrow = t.now()
		}
	}
	if fl.state != rotated {
		if pi, err := os.Stat(fl.path); err != nil || !os.SameFile(fi, pi) {
			fl.state = rotated
		}
	}
	removed := false
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		removed = true
	}
	if removed || (fl.state == rotated && t.now().Sub(fl.lastGrow) >= t.cfg.IdleGrace) {
		// Rotated away for good: its last line is as complete as it gets.
		if fl.id != "" {
			if _, err := t.read(ctx, fl, fl.f, send); err != nil {
				return err
			}
			if err := fl.flush(send); err != nil {
				return err
			}
		}
		fl.state = finished
	}
	return nil
}

// truncated says how fl now holds other content than what was read, or ""
// if it does not: it is shorter than what was read; or it was truncated and
// written again up to or past the offset between two polls, so that its
// first line changed, or the bytes just before the offset did. Only content
// written again with the same first line and the same tailSize bytes before
// the offset goes unseen. The checks cost two small preads a poll.
func (t *Tailer) truncated(fl *file, size int64) string {
	if size < fl.split.consumed() {
		return "smaller than what was read"
	}
	id, err := readID(fl.f, false)
	if err == nil && id != fl.id || errors.Is(err, ErrNoFingerprint) {
		return "its first line changed"
	}
	if n := int64(len(fl.tail)); n > 0 {
		var buf [tailSize]byte
		if _, err := fl.f.ReadAt(buf[:n], fl.split.off-n); err != nil || !bytes.Equal(buf[:n], fl.tail) {
			return "the lines before the read offset changed"
		}
	}
	return ""
}

// warn logs msg about path once, and again only after ProblemLogInterval
// while what it is about (kind) goes on happening.
func (t *Tailer) warn(path, kind, msg string, args ...any) {
	key, now := kind+"\x00"+path, t.now()
	if last, ok := t.warned[key]; ok && now.Sub(last) < ProblemLogInterval {
		return
	}
	t.warned[key] = now
	t.log.Warn(msg, args...)
}

// read reads src, which is fl's content, to its end and sends its complete
// lines. It returns how many bytes it read, and an error only if ctx is
// done: a file that cannot be read is logged, and looked at again on the
// next poll.
func (t *Tailer) read(ctx context.Context, fl *file, src io.Reader, send func(Chunk) error) (int64, error) {
	n, err := fl.readFrom(src, func(c Chunk) error {
		fl.remember(c)
		return send(c)
	})
	if ctx.Err() != nil {
		return n, ctx.Err()
	}
	if err != nil {
		t.log.Warn("read", "path", fl.path, "err", err)
	}
	return n, nil
}

// readGzip reads a compressed file from its position to its end. It does
// not grow, so it is read once.
func (t *Tailer) readGzip(ctx context.Context, fl *file, send func(Chunk) error) error {
	src, err := content(fl.f, fl.f, true, fl.split.off)
	if err != nil {
		t.log.Warn("gzip", "path", fl.path, "position", fl.split.off, "err", err)
		return nil
	}
	if _, err := t.read(ctx, fl, src, send); err != nil {
		return err
	}
	return fl.flush(send)
}
