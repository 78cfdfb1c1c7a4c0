package tailer

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
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
	// (see streams); with none, a run stopped before its first
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
	// streams tells, for each plain path followed, a rotated copy never
	// read that belongs to its stream from an archive.
	streams streams

	// problems holds, by path, the patterns that match no file and the
	// files that cannot be opened, as of the last re-scan.
	problems map[string]*problem

	// warned says when each rate-limited warning was last logged.
	warned map[string]time.Time

	rescanNow chan struct{}
	status    atomic.Pointer[[]FileStatus]   // published after every poll
	openPath  func(string) (*os.File, error) // os.Open, or Deps.open
}

// New returns a tailer of the files matching patterns (paths or globs).
// positions gives each file's committed offset; out receives the chunks.
func New(cfg Config, patterns []string, positions Positions, out chan<- Chunk, deps Deps) *Tailer {
	t := &Tailer{
		cfg: cfg.withDefaults(), patterns: patterns, out: out, log: deps.Logger, now: deps.Now, waker: deps.Waker,
		offsets: newOffsets(positions), done: make(map[fileKey]doneState), streams: newStreams(deps.Streams),
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

// Run follows the files until ctx is done. It returns nil then; it returns
// an error only if the positions cannot be read.
//
// Each pass polls every open file; it first matches the paths and globs
// again if a file-system event or Rescan asked for it, or if the re-scan
// interval has passed. Between passes Run waits for the waker.
func (t *Tailer) Run(ctx context.Context) error {
	if err := t.streams.load(t.patterns); err != nil {
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
