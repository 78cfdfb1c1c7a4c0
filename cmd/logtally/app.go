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
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/status"
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
	Ingest ingest.Config
	API    api.Config
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
	started  time.Time

	// wrapStore, if set by a test, stands between ingest and the store.
	wrapStore func(ingest.Committer) ingest.Committer
}

// NewMain returns a Main with the defaults.
func NewMain() *Main {
	return &Main{Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.LookupEnv,
		Window: window.DefaultConfig(), Rules: classify.DefaultConfig(), Ingest: ingest.DefaultConfig(), API: api.DefaultConfig()}
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
		m.API.RegisterFlags(fs)
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
		if err := tailer.CheckFollowed(m.Files); err != nil {
			return err
		}
	}
	if m.Command == "replay" {
		if len(m.Files) == 0 {
			return errors.New("replay: no FILE given")
		}
		m.Ingest.Anchor = ingest.AnchorLog // a replay has no "now" of its own
	}
	m.Ingest.PersistWindow = m.Command == "run" // replay serves no window
	m.Ingest.MaxLine = m.Tailer.MaxLine
	if _, err := m.Parser.Compile(); err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	return errors.Join(m.Window.Validate(), m.Rules.Validate(), m.Ingest.Validate(), m.Tailer.Validate(),
		m.API.Validate(), m.Store.Validate())
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
	if m.Command == "replay" {
		if err := tailer.CheckReplayed(m.Files); err != nil {
			return err
		}
	}
	if err := m.open(); err != nil {
		return err
	}
	ctx, m.cancel = context.WithCancel(ctx)
	if m.Command == "replay" {
		return m.replay(ctx)
	}
	return m.run(ctx)
}

// open opens the store, and on it the live window and the pipeline that
// feeds them.
func (m *Main) open() error {
	m.Parser.Logger = m.Logger // told once if the format falls back to gonx
	format, err := m.Parser.Compile()
	if err != nil {
		return err
	}
	storeCfg := m.Store
	storeCfg.Now = m.Now
	if m.store, err = storage.OpenConfig(storeCfg); err != nil {
		return err
	}
	classifier, err := classify.New(m.Rules, m.store.Salt())
	if err != nil {
		return err
	}
	if m.win, err = ingest.Restore(m.store, m.Window, m.Ingest.Anchor, m.Now()); err != nil {
		return err
	}
	var store ingest.Committer = m.store
	if m.wrapStore != nil {
		store = m.wrapStore(m.store)
	}
	m.pipeline = ingest.New(m.Ingest, ingest.Deps{Format: format, Classifier: classifier, Window: m.win, Store: store,
		Now: m.Now, Logger: m.Logger})
	return nil
}

func (m *Main) run(ctx context.Context) error {
	// Chunks are up to 256 KiB: 8 of them let reading run ahead of ingest
	// without holding much of a backlog in memory.
	chunks := make(chan tailer.Chunk, 8)
	deps := status.Deps{Pipeline: m.pipeline}
	if len(m.Files) > 0 {
		m.tail = tailer.New(m.Tailer, m.Files, m.store.Position, chunks, tailer.Deps{Logger: m.Logger})
		deps.Files, deps.Following = m.tail.Files, m.follow(ctx)
	}
	m.done = make(chan error, 1)
	go func() { m.done <- m.pipeline.Run(ctx, chunks) }()
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		m.store.RunPruner(ctx, time.Minute, m.Logger)
	}()
	report := status.New(status.Config{Version: buildVersion(), Started: m.started, DB: m.Store.Path}, deps)
	if err := m.serve(report); err != nil {
		return err
	}
	if m.DebugListen != "" {
		return m.serveDebug()
	}
	return nil
}

// serve serves the API, with the report's status, readiness and metrics.
func (m *Main) serve(report *status.Report) error {
	ln, err := net.Listen("tcp", m.Listen)
	if err != nil {
		return err
	}
	m.listener = ln
	handler := api.New(m.API, api.Deps{Snapshot: m.win.Current, History: m.store, Ready: report.Ready,
		Status: report.Status, Metrics: report.Registry(), Now: m.Now, Logger: m.Logger})
	m.server = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	// Shutdown waits for responses to end, and an event stream never does
	// by itself: ending them is the handler's part.
	m.server.RegisterOnShutdown(handler.Close)
	go m.server.Serve(ln)
	m.Logger.Info("serving", "addr", ln.Addr().String(), "files", len(m.Files), "db", m.Store.Path)
	return nil
}

// follow runs the tailer until ctx is done, and returns what tells why it
// stopped early, if it did.
func (m *Main) follow(ctx context.Context) (stopped func() error) {
	var failed atomic.Pointer[error]
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		if err := m.tail.Run(ctx); err != nil {
			m.Logger.Error("following stopped", "err", err)
			failed.Store(&err)
		}
	}()
	return func() error {
		if err := failed.Load(); err != nil {
			return *err
		}
		return nil
	}
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
	stopProgress := m.progress(reader, start)
	readErr := reader.Replay(readCtx, m.Files, m.store.Position, chunks)
	if readCtx.Err() != nil && ctx.Err() == nil {
		readErr = nil // merely stopped by a pipeline error
	}
	close(chunks)
	err := errors.Join(readErr, <-m.done)
	m.done = nil
	stopProgress()
	fmt.Fprint(m.Stdout, m.pipeline.Summary(len(m.Files), time.Since(start)))
	return err
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
