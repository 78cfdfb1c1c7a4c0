package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

const usage = `logtally turns web-server access logs into live visitor counts.

Usage:
  logtally run [flags] [FILE...]    follow FILEs (paths or quoted globs, such as
                                    '/var/log/nginx/access.log*') and serve the
                                    JSON API; with no FILE, serve what the
                                    database holds
  logtally replay [flags] FILE...   read FILEs (plain or .gz) to their end,
                                    commit, print a summary and exit

Run 'logtally run -h' or 'logtally replay -h' for the flags.
`

// Main is the program: its flags, and everything Run starts and Close stops.
// The tests drive this same struct.
type Main struct {
	Command string // "run" or "replay"
	Listen  string // API address, for run
	// DebugListen, if set, is where run serves Go's pprof profiles: how to
	// see where memory and CPU go on a production box.
	DebugListen string
	Files       []string

	Parser parser.Config
	Window window.Config
	Rules  classify.Config
	Store  storage.Config
	Tailer tailer.Config
	Ingest ingest.Config // its Format, Store, ... are filled in by Run
	HTTP   api.HTTPConfig
	Log    LogConfig

	Now    func() time.Time // clock; time.Now unless a test injects one
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	// Getenv looks up environment variables for flags; os.LookupEnv unless a
	// test injects one.
	Getenv func(string) (string, bool)

	store    *storage.Store
	win      *window.Window
	pipeline *ingest.Pipeline
	server   *http.Server
	listener net.Listener
	debug    *http.Server
	debugLn  net.Listener
	cancel   context.CancelFunc
	readers  sync.WaitGroup // file readers
	done     chan error     // the pipeline's result
	tail     *tailer.Tailer
	tailErr  *atomic.Pointer[error] // why following stopped, if it did
	started  time.Time

	commitSeconds prometheus.Histogram
	// wrapStore, if set by a test, stands between ingest and the store.
	wrapStore func(ingest.Committer) ingest.Committer
}

// NewMain returns a Main with the defaults.
func NewMain() *Main {
	return &Main{Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.LookupEnv,
		Window: window.DefaultConfig(), Rules: classify.DefaultConfig()}
}

// ParseFlags reads the command and its flags, and checks them before
// anything starts.
func (m *Main) ParseFlags(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(m.Stderr, usage)
		if len(args) == 0 {
			return errors.New("no command")
		}
		return flag.ErrHelp
	}
	m.Command = args[0]
	if m.Command != "run" && m.Command != "replay" {
		fmt.Fprint(m.Stderr, usage)
		return fmt.Errorf("unknown command %q", m.Command)
	}
	fs := flag.NewFlagSet("logtally "+m.Command, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	m.Store.RegisterFlags(fs)
	m.Parser.RegisterFlags(fs)
	m.Window.RegisterFlags(fs)
	m.Rules.RegisterFlags(fs)
	m.Ingest.RegisterFlags(fs)
	m.Log.RegisterFlags(fs)
	synopsis := "logtally replay [flags] FILE..."
	if m.Command == "run" {
		fs.StringVar(&m.Listen, "listen", "127.0.0.1:8080", "API listen `address`")
		fs.StringVar(&m.DebugListen, "debug-listen", "",
			"serve Go's pprof profiles under /debug/pprof/ on this `address`; off when empty (keep it on loopback)")
		m.HTTP.RegisterFlags(fs)
		synopsis = "logtally run [flags] [FILE...]"
	}
	m.Tailer.RegisterFlags(fs, m.Command == "run")
	fs.Usage = usageFunc(fs, m.Stderr, synopsis)
	if m.Getenv == nil {
		m.Getenv = os.LookupEnv
	}
	if err := applyEnv(fs, m.Getenv); err != nil {
		return err
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	m.Files = fs.Args()
	if _, err := m.Log.Logger(io.Discard); err != nil {
		return err
	}
	if m.Command == "run" {
		if err := checkFollowed(m.Files); err != nil {
			return err
		}
	}
	if m.Command == "replay" {
		if len(m.Files) == 0 {
			return errors.New("replay: no FILE given")
		}
		m.Ingest.Anchor = ingest.AnchorLog // a replay has no "now" of its own
	}
	if _, err := m.Parser.Compile(); err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	return errors.Join(m.Window.Validate(), m.Rules.Validate(), m.Ingest.Validate(), m.Tailer.Validate(),
		m.Store.Validate())
}

// Run starts the command. For run, it returns once the API is listening and
// the files are being followed; Close stops them. For replay, it returns
// when every file has been read and committed.
func (m *Main) Run(ctx context.Context) (err error) {
	m.started = time.Now()
	if m.Logger == nil {
		if m.Logger, err = m.Log.Logger(m.Stderr); err != nil {
			return err
		}
	}
	m.Parser.Logger = m.Logger // told once if the format falls back to gonx
	format, err := m.Parser.Compile()
	if err != nil {
		return err
	}
	if m.Command == "replay" {
		for _, f := range m.Files {
			if _, err := os.Stat(f); err != nil {
				return err
			}
		}
	}
	if m.store, err = storage.Open(m.Store, m.Now); err != nil {
		return err
	}
	classifier, err := classify.New(m.Rules, m.store.Salt())
	if err != nil {
		return err
	}
	if err := m.openWindow(); err != nil {
		return err
	}
	cfg := m.Ingest
	cfg.Format, cfg.Classifier, cfg.Window, cfg.Store, cfg.Now, cfg.Logger = format, classifier, m.win, m.store, m.Now, m.Logger
	cfg.PersistWindow = m.Command == "run"
	if m.wrapStore != nil {
		cfg.Store = m.wrapStore(m.store)
	}
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "logtally_commit_duration_seconds",
		Help: "Time to commit a batch to the database.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
	cfg.OnCommit = func(d time.Duration) { m.commitSeconds.Observe(d.Seconds()) }
	cfg.MaxLine = m.Tailer.MaxLine
	m.pipeline = ingest.New(cfg)
	ctx, m.cancel = context.WithCancel(ctx)
	if m.Command == "replay" {
		return m.replay(ctx)
	}
	return m.run(ctx)
}

// openWindow builds the live window and refills it from the store: exactly
// from the per-second state a previous run kept, and, for older parts of the
// window that only a replay wrote, to the minute from the stored minutes.
func (m *Main) openWindow() error {
	end := m.Now()
	if m.Ingest.Anchor == ingest.AnchorLog {
		last, ok, err := m.store.Last()
		if err != nil {
			return err
		}
		end = last.Add(time.Minute - time.Second)
		if !ok {
			end = time.Unix(0, 0)
		}
	}
	m.win = window.New(m.Window, end)
	start := m.win.Start()
	seconds, err := m.store.WindowSeconds(start, end.Unix())
	if err != nil {
		return err
	}
	exactFrom := end.Unix() + 1
	if len(seconds) > 0 {
		exactFrom = seconds[0].Time - seconds[0].Time%60 // whole minutes before it
	}
	minutes, err := m.store.Minutes(time.Unix(start, 0), time.Unix(exactFrom-1, 0))
	if err != nil {
		return err
	}
	for _, mi := range minutes {
		if mi.Time.Unix()+59 >= exactFrom {
			continue
		}
		visitors, _, err := m.store.MinuteVisitors(mi.Time)
		if err != nil {
			return err
		}
		paths := make(map[string]int64, len(mi.Top))
		for _, p := range mi.Top {
			paths[p.Path] = p.PageViews
		}
		m.win.Seed(mi.Time.Unix()+59, mi.Requests, mi.PageViews, visitors, paths)
	}
	for _, sec := range seconds {
		m.win.Seed(sec.Time, sec.Requests, sec.PageViews, sec.Visitors, sec.Paths)
	}
	m.win.Publish()
	return nil
}

func (m *Main) run(ctx context.Context) error {
	// Chunks are up to 256 KiB: 8 of them let reading run ahead of ingest
	// without holding much of a backlog in memory.
	chunks := make(chan tailer.Chunk, 8)
	if len(m.Files) > 0 {
		t := tailer.New(m.Tailer, m.Files, m.store.Position, chunks, m.Logger)
		m.tail, m.tailErr = t, new(atomic.Pointer[error])
		m.readers.Add(1)
		go func() {
			defer m.readers.Done()
			if err := t.Run(ctx); err != nil {
				m.Logger.Error("following stopped", "err", err)
				m.tailErr.Store(&err)
			}
		}()
	}
	m.done = make(chan error, 1)
	go func() { m.done <- m.pipeline.Run(ctx, chunks) }()
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		m.store.RunPruner(ctx, time.Minute, m.Logger)
	}()

	ln, err := net.Listen("tcp", m.Listen)
	if err != nil {
		return err
	}
	m.listener = ln
	m.server = &http.Server{
		Handler: api.New(api.Config{Snapshot: m.win.Current, History: m.store, Ready: m.ready,
			Now: m.Now, Logger: m.Logger, HTTP: m.HTTP, Status: m.status, Metrics: m.registry()}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	go m.server.Serve(ln)
	m.Logger.Info("serving", "addr", ln.Addr().String(), "files", len(m.Files), "db", m.Store.Path)
	if m.DebugListen != "" {
		if err := m.serveDebug(); err != nil {
			return err
		}
	}
	return nil
}

// serveDebug serves the pprof profiles on their own listener, apart from
// the API, so that they are never exposed where the API is.
func (m *Main) serveDebug() error {
	ln, err := net.Listen("tcp", m.DebugListen)
	if err != nil {
		return fmt.Errorf("--debug-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	m.debugLn = ln
	m.debug = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 60 * time.Second}
	go m.debug.Serve(ln)
	m.Logger.Info("serving profiles", "addr", ln.Addr().String())
	return nil
}

func (m *Main) replay(ctx context.Context) error {
	start := time.Now()
	var total int64
	for _, path := range m.Files {
		if fi, err := os.Stat(path); err == nil {
			total += fi.Size()
		}
	}
	reader := &tailer.Reader{MaxLine: m.Tailer.MaxLine}
	chunks := make(chan tailer.Chunk, 8)
	m.done = make(chan error, 1)
	// If the pipeline stops early (a failed commit), reading stops too.
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() {
		err := m.pipeline.Replay(ctx, chunks)
		stopReading()
		m.done <- err
	}()
	stopProgress := m.progress(reader, total, start)
	// read holds the offset each identity was read to in this replay, so
	// that a file named twice (or with its .gz) is read once.
	read := make(map[string]int64)
	var readErr error
	for _, path := range m.Files {
		id, err := tailer.ID(path)
		if errors.Is(err, tailer.ErrNoFingerprint) {
			continue // empty: nothing to read
		}
		var off int64
		var ok bool
		if err == nil {
			off, ok, err = m.store.Position(id)
		}
		if done, seen := read[id]; seen && (!ok || done > off) {
			off = done
		}
		if err == nil {
			read[id], err = reader.Read(readCtx, path, id, off, chunks)
		}
		if err != nil {
			if readCtx.Err() == nil || ctx.Err() != nil {
				readErr = err // not merely stopped by a pipeline error
			}
			break
		}
	}
	close(chunks)
	err := errors.Join(readErr, <-m.done)
	m.done = nil
	stopProgress()
	secs := time.Since(start).Seconds()
	lines := m.pipeline.Lines()
	fmt.Fprintf(m.Stdout, "replay: %d files, %d lines read, %d parsed, %d rejected in %.2fs (%.0f lines/s)\n",
		len(m.Files), lines, m.pipeline.Parsed(), m.pipeline.Rejected(), secs, float64(lines)/max(secs, 1e-9))
	if n := m.pipeline.Rejected(); n > 0 {
		var parts []string
		for reason, c := range m.pipeline.RejectedBy() {
			if c > 0 {
				parts = append(parts, fmt.Sprintf("%s: %d", reason, c))
			}
		}
		fmt.Fprintf(m.Stdout, "rejected by reason: %s\n", strings.Join(parts, ", "))
	}
	return err
}

// ready reports why the daemon cannot make progress: commits failing, or
// the follower stopped.
func (m *Main) ready() error {
	if err := m.pipeline.Err(); err != nil {
		return fmt.Errorf("store not writable: %w", err)
	}
	if m.tailErr != nil {
		if err := m.tailErr.Load(); err != nil {
			return fmt.Errorf("following stopped: %w", *err)
		}
	}
	return nil
}

// Addr returns the address the API listens on, once Run has returned.
func (m *Main) Addr() string { return m.listener.Addr().String() }

// DebugAddr returns the address the profiles are served on, once Run has
// returned; empty when they are not served.
func (m *Main) DebugAddr() string {
	if m.debugLn == nil {
		return ""
	}
	return m.debugLn.Addr().String()
}

// Close stops reading, commits what was read, shuts the API down and closes
// the database. It is safe to call after a failed Run, and more than once.
func (m *Main) Close() error {
	if m.cancel != nil {
		m.cancel()
	}
	m.readers.Wait()
	var errs []error
	if m.done != nil {
		errs = append(errs, <-m.done)
		m.done = nil
	}
	if m.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errs = append(errs, m.server.Shutdown(ctx))
		m.server = nil
	}
	if m.debug != nil {
		errs = append(errs, m.debug.Close()) // a profile being taken is cut short
		m.debug = nil
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
		m.store = nil
	}
	return errors.Join(errs...)
}
