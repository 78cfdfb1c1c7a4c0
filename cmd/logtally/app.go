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

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/fleet"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/report"
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
  logtally report [flags]           print the totals, the days and the top
                                    pages of a range of days the database holds
  logtally check --db FILE          check a database file for damage, and say
                                    how to recover from it
  logtally version                  print the version, commit and Go version

Run 'logtally run -h', 'logtally replay -h' or 'logtally report -h' for the flags.
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
	// patterns are what is followed or replayed: Files, then the paths of
	// --site (globs expanded, for replay); see sitePatterns.
	patterns []string
	// RequireFiles makes a followed path or glob that matches no file a
	// readiness failure, rather than only a warning and a status.
	RequireFiles bool

	Parser   parser.Config
	Window   window.Config
	Rules    classify.Config
	Store    storage.Config
	Tailer   tailer.Config
	Ingest   pipelineConfig
	API      api.Config
	Log      LogConfig
	Report   report.Config
	Fleet    fleet.Config // run only
	Counters counter.Config

	Now    func() time.Time // clock; time.Now unless a test injects one
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	// Getenv looks up environment variables for flags; os.LookupEnv unless a
	// test injects one.
	Getenv func(string) (string, bool)

	store    *storage.Store
	pipeline *pipeline
	server   *http.Server
	listener net.Listener
	debug    *http.Server
	debugLn  net.Listener
	cancel   context.CancelFunc
	readers  sync.WaitGroup // file readers
	done     chan error     // the pipeline's result
	tail     *tailer.Tailer
	started  time.Time
	fleet    *fleet.Node      // nil without --fleet
	matcher  *counter.Matcher // nil without counters

	// wrapStore, if set by a test, stands between ingest and the store.
	wrapStore func(committer) committer
}

// NewMain returns a Main with the defaults.
func NewMain() *Main {
	return &Main{Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.LookupEnv,
		Window: window.DefaultConfig(), Rules: classify.DefaultConfig(), Ingest: defaultPipelineConfig(), API: api.DefaultConfig()}
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
	if m.Command == "version" || m.Command == "--version" || m.Command == "-version" {
		m.Command = "version"
		if len(args) > 1 {
			return fmt.Errorf("version takes no arguments, got %q", args[1:])
		}
		return nil
	}
	if m.Command == "check" {
		return m.parseCheck(args[1:])
	}
	if synopsis[m.Command] == "" {
		err := fmt.Errorf("unknown command %q: the commands are run, replay, report, check and version", m.Command)
		if strings.HasPrefix(m.Command, "-") {
			err = fmt.Errorf("flag %s before the command: write it after run, replay or report", m.Command)
		}
		m.Command = ""
		return m.usageError(err)
	}
	fs := m.flagSet(m.Command)
	if m.Getenv == nil {
		m.Getenv = os.LookupEnv
	}
	if err := applyEnv(fs, m.Getenv); err != nil {
		return m.usageError(err)
	}
	if err := fs.Parse(args[1:]); errors.Is(err, flag.ErrHelp) {
		usageFunc(fs, m.Stderr, synopsis[m.Command])()
		return err
	} else if err != nil {
		return m.usageError(flagError(fs, NewMain().flagSet(otherCommand[m.Command]), err))
	}
	m.Files = fs.Args()
	return m.usageError(m.check())
}

// check reports flag values and files that cannot work, before anything
// starts.
func (m *Main) check() error {
	if m.Command == "report" {
		if len(m.Files) > 0 {
			return fmt.Errorf("report takes no FILE, got %q: it reads the database (--db)", m.Files)
		}
		return errors.Join(m.Report.Validate(), m.Store.Validate(), m.Counters.Validate())
	}
	if _, err := m.Log.Logger(io.Discard); err != nil {
		return err
	}
	if err := m.sitePatterns(); err != nil {
		return err
	}
	if m.Command == "run" {
		if err := tailer.CheckFollowed(m.patterns); err != nil {
			return err
		}
	}
	if m.Command == "replay" {
		if len(m.patterns) == 0 {
			return errors.New("no FILE given: name the logs to read, such as /var/log/nginx/access.log.1")
		}
		m.Ingest.replay(m.Tailer.MaxLine)
	} else {
		m.Ingest.live(m.Tailer.MaxLine)
	}
	if _, err := m.Parser.Compile(); err != nil {
		if m.Parser.NginxConf != "" {
			return fmt.Errorf("--nginx-conf: %w", err)
		}
		return fmt.Errorf("--format: %w", err)
	}
	return errors.Join(m.Window.Validate(), m.Rules.Validate(), m.Ingest.validate(), m.Tailer.Validate(),
		m.API.Validate(), m.fleetSettings(), m.Store.Validate(), m.Counters.Validate())
}

// synopsis is each command's usage line.
var synopsis = map[string]string{
	"run":    "logtally run [flags] [FILE...]",
	"replay": "logtally replay [flags] FILE...",
	"report": "logtally report [flags]",
}

// otherCommand names, for a flag a command does not have, the command that
// has it.
var otherCommand = map[string]string{"run": "replay", "replay": "run", "report": "run"}

// flagSet registers the flags of command, and only those, on a new flag
// set bound to m's configuration. The flag package prints nothing: help and
// errors are written by ParseFlags.
func (m *Main) flagSet(command string) *flag.FlagSet {
	fs := flag.NewFlagSet("logtally "+command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if command == "report" {
		// report only reads the database: its file and zone, and what
		// to report. It logs nothing.
		m.Store.RegisterReadFlags(fs)
		m.Report.RegisterFlags(fs)
		m.Counters.RegisterFlags(fs) // a section for each
		return fs
	}
	run := command == "run"
	m.Store.RegisterFlags(fs)
	m.Parser.RegisterFlags(fs)
	m.Rules.RegisterFlags(fs)
	m.Ingest.registerFlags(fs, run)
	m.Counters.RegisterFlags(fs)
	m.Log.RegisterFlags(fs)
	m.Tailer.RegisterFlags(fs, run)
	if run {
		// Replay has no live window: it reads archives to their end and
		// serves nothing, so the window's and the server's flags are run's.
		m.Window.RegisterFlags(fs)
		fs.StringVar(&m.Listen, "listen", "127.0.0.1:8080", "API listen `address`")
		fs.StringVar(&m.DebugListen, "debug-listen", "",
			"serve Go's pprof profiles under /debug/pprof/ on this `address`; off when empty (keep it on loopback)")
		fs.BoolVar(&m.RequireFiles, "require-files", false,
			"make /readyz fail while a followed path or glob matches no file (they are reported either way)")
		m.API.RegisterFlags(fs)
		m.Fleet.RegisterFlags(fs)
	} else {
		// Replay has no window, but turns away lines as far ahead of the
		// clock as run does.
		fs.DurationVar(&m.Window.MaxSkew, "max-skew", m.Window.MaxSkew,
			"lines further ahead of the clock than this are rejected")
	}
	return fs
}

// usageError marks err, when there is one, as a mistake on the command line.
func (m *Main) usageError(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Command: m.Command, Err: err}
}

// Run starts the command. For run, it returns once the API is listening and
// the files are being followed; Close stops them. For replay, it returns
// when every file has been read and committed.
func (m *Main) Run(ctx context.Context) (err error) {
	if m.Command == "version" {
		_, err := io.WriteString(m.Stdout, versionLine())
		return err
	}
	if m.Command == "report" {
		return m.report()
	}
	if m.Command == "check" {
		return m.runCheck()
	}
	m.started = m.Now()
	if m.Logger == nil {
		if m.Logger, err = m.Log.Logger(m.Stderr); err != nil {
			return err
		}
	}
	if m.Command == "replay" {
		if err := tailer.CheckReplayed(m.patterns); err != nil {
			return err
		}
	}
	ctx, m.cancel = context.WithCancel(ctx)
	if err := m.open(ctx); err != nil {
		return err
	}
	if m.Command == "replay" {
		return m.replay(ctx)
	}
	return m.run(ctx)
}

// open opens the store, and on it the live window and the pipeline that
// feeds them. In fleet mode, on a first start, it waits for the fleet
// database (see salt).
func (m *Main) open(ctx context.Context) error {
	m.Parser.Logger = m.Logger // told once if the format falls back to gonx
	format, err := m.Parser.Compile()
	if err != nil {
		return err
	}
	if m.store, err = storage.Open(m.Store, m.Now); err != nil {
		return storeFix(err, m.Store.Path)
	}
	m.store.LogRetention(m.Logger)
	rules := m.Rules
	if !format.HasUserAgent() {
		rules.NoUserAgent = true
		m.Logger.Info("the log format has no user agent: crawlers cannot be told from people and count as visitors",
			"format", format.String())
	}
	salt, err := m.salt(ctx)
	if err != nil {
		return err
	}
	classifier, err := classify.New(rules, salt)
	if err != nil {
		return err
	}
	deps := pipelineDeps{format: format, classifier: classifier, store: m.store, commit: m.store,
		window: m.Window, counterMax: m.Counters.MaxKeys, now: m.Now, logger: m.Logger}
	if m.wrapStore != nil {
		deps.commit = m.wrapStore(m.store)
	}
	if len(m.Counters.Counters) > 0 {
		if m.matcher, err = counter.New(m.Counters); err != nil {
			return err
		}
		deps.matcher = m.matcher
	}
	if m.multiSite() {
		if err := m.allSitesView(); err != nil {
			return err
		}
		if deps.knownSites, err = m.storedSites(); err != nil {
			return err
		}
	}
	m.pipeline, err = newPipeline(m.Ingest, deps)
	return err
}

func (m *Main) run(ctx context.Context) error {
	// Chunks are up to 256 KiB: 8 of them let reading run ahead of ingest
	// without holding much of a backlog in memory.
	chunks := make(chan tailer.Chunk, 8)
	deps := m.pipeline.statusDeps(status.Deps{Now: m.Now, StoreFile: m.store.FileErr})
	if len(m.patterns) > 0 {
		m.tail = tailer.New(m.Tailer, m.patterns, m.store.Position, chunks, tailer.Deps{Logger: m.Logger, Streams: m.store})
		deps.Files, deps.Following = m.tail.Files, m.follow(ctx)
	}
	m.done = make(chan error, 1)
	go func() { m.done <- m.pipeline.Run(ctx, chunks) }()
	if m.fleet != nil {
		m.fleet.Start(ctx)
		deps.Fleet = m.fleet.Stats
	}
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		m.store.RunPruner(ctx, time.Minute, m.Logger)
	}()
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		m.store.WatchFile(ctx, 2*time.Second, m.Logger) // logs once if the file is deleted
	}()
	report := status.New(status.Config{Version: buildVersion(), Started: m.started, DB: m.Store.Path,
		RequireFiles: m.RequireFiles}, deps)
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
	deps := api.Deps{Snapshot: m.pipeline.Snapshot, History: m.store, Ready: report.Ready,
		Status: report.Status, Metrics: report.Registry(), Now: m.Now, Zone: m.store.Location(), Logger: m.Logger,
		Fleet: m.apiFleet()}
	sites := apiSites{m.pipeline, m.store, m.matcher}
	if m.multiSite() {
		deps.Sites = sites
		deps.History = sites.SiteHistory(logtally.AllSites)
	}
	if m.matcher != nil {
		deps.Counters = sites
	}
	handler := api.New(m.API, deps)
	m.server = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    api.MaxHeaderBytes, // the handler answers past its own limits, in JSON
	}
	// Shutdown waits for responses to end, and an event stream never does
	// by itself: ending them is the handler's part.
	m.server.RegisterOnShutdown(handler.Close)
	go m.server.Serve(ln)
	m.Logger.Info("serving", "addr", ln.Addr().String(), "paths", len(m.patterns), "db", m.Store.Path)
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
	readErr := reader.Replay(readCtx, m.patterns, m.store.Position, chunks)
	if readCtx.Err() != nil && ctx.Err() == nil {
		readErr = nil // merely stopped by a pipeline error
	}
	close(chunks)
	err := errors.Join(readErr, <-m.done)
	m.done = nil
	if err == nil {
		// What the replay moved past its retention goes now, not at the
		// next run, and the log says what it was.
		err = m.store.PruneLogged(ctx, m.Logger)
	}
	stopProgress()
	return m.summarize(start, err)
}

// summarize prints what a replay that started at start did, and returns
// its error, saying that a replay that failed on its first lines committed
// nothing.
func (m *Main) summarize(start time.Time, err error) error {
	sum := m.pipeline.Summary(len(m.patterns), time.Since(start))
	sum.Kept = m.store.Kept()
	fmt.Fprint(m.Stdout, sum)
	if isMostlyRejected(err) {
		return fmt.Errorf("replay committed nothing: %w", err)
	}
	return err
}

// reportLockWait is how long report waits for the database's lock.
const reportLockWait = 2 * time.Second

// report prints the report that m.Report asks for, from the database
// opened read-only: bbolt lets no other process open the file while a
// running logtally holds it, so report says so and where else to look.
func (m *Main) report() error {
	store, err := storage.OpenReadOnly(m.Store, reportLockWait)
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("%w; stop it to report from the file, or ask its API: /api/v1/series?step=1d and /api/v1/pages?from=DAY&to=DAY", err)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	site := m.Report.Site
	if site == "" {
		site = logtally.DefaultSite
		if _, ok := store.Site(logtally.AllSites); ok {
			site = logtally.AllSites
		}
	}
	src, ok := store.Site(site)
	if !ok {
		return fmt.Errorf("--site %s: the database holds no such site; it holds %s", site, strings.Join(store.Sites(), ", "))
	}
	cfg := m.Report
	cfg.Site = site
	var counters []report.CounterSource
	if len(m.Counters.Counters) > 0 {
		matcher, err := counter.New(m.Counters)
		if err != nil {
			return err
		}
		for _, c := range matcher.Counters() {
			// A counter's history is a site of its own; none before its
			// first lines.
			if st, ok := store.Site(logtally.CounterSite(c.Name)); ok {
				counters = append(counters, report.CounterSource{Name: c.Name, Source: st})
			}
		}
	}
	r, err := report.Build(src, cfg, counters...)
	if err != nil {
		return err
	}
	return r.Write(m.Stdout, cfg.Format)
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
	if m.fleet != nil {
		m.fleet.Close() // what it has not shipped waits in the store's outbox
		m.fleet = nil
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
		m.store = nil
	}
	return errors.Join(errs...)
}
