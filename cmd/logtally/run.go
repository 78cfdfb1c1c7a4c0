package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/fleet"
	"github.com/logtally/logtally/ingest/live"
	"github.com/logtally/logtally/status"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
)

// runCmd is `logtally run`: it follows logs, counts their lines as they are
// written, and serves the API, until Close.
type runCmd struct {
	proc *process
	countConfig
	serve serveConfig
	Fleet fleet.Config

	// What Run starts and Close stops.
	*counting                    // nil until Run opens it
	node      *fleet.Node        // nil without --fleet
	tail      *tailer.Tailer     // nil without FILE or --site
	http      servers            // the API, and the profiles if asked
	cancel    context.CancelFunc // ends what Run started
	readers   sync.WaitGroup     // the tailer, the pruner, the file watcher
	done      chan error         // the pipeline's result
	started   time.Time
}

func newRunCmd(p *process) *runCmd {
	return &runCmd{proc: p, countConfig: defaultCountConfig(), serve: serveConfig{API: api.DefaultConfig()}}
}

func (r *runCmd) registerFlags(fs *flag.FlagSet) {
	r.countConfig.registerFlags(fs, true)
	r.Window.RegisterFlags(fs)
	r.serve.registerFlags(fs)
	r.Fleet.RegisterFlags(fs)
}

// check takes the files to follow, and checks them and the flags.
func (r *runCmd) check(files []string) error {
	r.Files = files
	if err := r.sitePatterns(false); err != nil {
		return err
	}
	if err := tailer.CheckFollowed(r.patterns); err != nil {
		return err
	}
	r.Pipeline.live(r.Tailer.MaxLine)
	fleetErr := r.fleetSettings() // gives the store its outbox first
	return errors.Join(r.countConfig.validate(), r.serve.check(), fleetErr)
}

// Run opens the database, starts following the files and serves the API.
// It returns once they are under way; Close stops them.
func (r *runCmd) Run(ctx context.Context) (err error) {
	r.started = r.proc.Now()
	if err := r.ensureLogger(r.proc); err != nil {
		return err
	}
	if r.serve.listen != "" {
		r.proc.Logger.Warn("--listen is deprecated: it is --admin-listen now, which serves the whole API; serve the public figures apart with --public-listen, and protect the admin listener with --admin-token-file if it must leave loopback",
			"admin_listen", r.serve.AdminListen)
	}
	if err := r.http.listen(r.serve); err != nil {
		return err // before the database file is created
	}
	ctx, r.cancel = context.WithCancel(ctx)
	if r.counting, err = r.open(ctx, r.proc, r.joinFleet); err != nil {
		return err
	}
	deps := r.start(ctx)
	report := status.New(status.Config{Version: buildVersion(), Commit: buildCommit(), Started: r.started, DB: r.Store.Path,
		RequireFiles: r.serve.RequireFiles}, deps)
	r.http.serveAPI(r.serve, r.apiDeps(report), r.proc.Logger, len(r.patterns), r.Store.Path)
	if r.http.debugLn != nil {
		r.http.serveDebug(r.proc.Logger)
	}
	return nil
}

// start starts the pipeline, the tailer, the fleet's shipping and the
// store's upkeep, and returns what the status reads of them.
func (r *runCmd) start(ctx context.Context) status.Deps {
	// Chunks are up to 256 KiB: 8 of them let reading run ahead of the
	// pipeline without holding much of a backlog in memory.
	chunks := make(chan tailer.Chunk, 8)
	deps := r.pipeline.statusDeps(status.Deps{Now: r.proc.Now, StoreFile: r.store.FileErr, StoreDamage: r.storeDamage})
	if len(r.patterns) > 0 {
		r.tail = tailer.New(r.Tailer, r.patterns, r.store.Position, chunks, tailer.Deps{Logger: r.proc.Logger, Streams: r.store})
		deps.Files, deps.Following = r.tail.Files, r.follow(ctx)
	}
	r.done = make(chan error, 1)
	go func() { r.done <- r.pipeline.Run(ctx, chunks) }()
	if r.node != nil {
		r.node.Start(ctx)
		deps.Fleet = r.node.Stats
	}
	r.goRead(func() { r.store.RunPruner(ctx, time.Minute, r.proc.Logger) })
	r.goRead(func() { r.store.WatchFile(ctx, 2*time.Second, r.proc.Logger) }) // logs once if the file is deleted
	r.goRead(func() { r.store.Verify(ctx, r.proc.Logger) })                   // reads the file once, for damage
	return deps
}

// storeDamage is what the status says of damage in the database file.
func (r *runCmd) storeDamage() (problems []string, recover string) {
	var damage *storage.DamageError
	if !errors.As(r.store.Damage(), &damage) {
		return nil, ""
	}
	problems = damage.Problems
	if damage.More > 0 {
		problems = append(problems, fmt.Sprintf("and %d more", damage.More))
	}
	return problems, storage.DamageFix(r.Store.Path)
}

// goRead runs f on a goroutine that Close waits for.
func (r *runCmd) goRead(f func()) {
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		f()
	}()
}

// follow runs the tailer until ctx is done, and returns what tells why it
// stopped early, if it did.
func (r *runCmd) follow(ctx context.Context) (stopped func() error) {
	var failed atomic.Pointer[error]
	r.goRead(func() {
		if err := r.tail.Run(ctx); err != nil {
			r.proc.Logger.Error("following stopped", "err", err)
			failed.Store(&err)
		}
	})
	return func() error {
		if err := failed.Load(); err != nil {
			return *err
		}
		return nil
	}
}

// apiDeps is what the API answers from: the live windows, the store's
// history, the status, and the fleet's and the sites' when counted.
func (r *runCmd) apiDeps(report *status.Report) api.Deps {
	deps := api.Deps{Snapshot: r.pipeline.Snapshot, Published: r.pipeline.Published, History: r.store, Ready: report.Ready,
		Status: report.Status, Metrics: report.Registry(), Now: r.apiNow(), Zone: r.store.Location(), Logger: r.proc.Logger,
		Fleet: r.apiFleet(), Backup: r.store.Backup, DB: absPath(r.Store.Path)}
	sites := apiSites{pipeline: r.pipeline, store: r.store, matcher: r.matcher, deriver: r.deriver}
	if r.Pipeline.multiSite() {
		deps.Sites = sites
		deps.History = sites.SiteHistory(logtally.AllSites)
	}
	if r.matcher != nil {
		deps.Counters = sites
	}
	deps.Breakdowns = sites
	return deps
}

// apiNow is what the API takes for now: the clock, or with --window-end
// log the live window's end, so that a series asked for no range, and
// "today", are those of the newest line, as the window is.
func (r *runCmd) apiNow() func() time.Time {
	if r.Pipeline.forRun.Anchor != live.AnchorLog {
		return r.proc.Now
	}
	return func() time.Time { return r.pipeline.Snapshot().To }
}

// Rescan matches the followed paths and globs again, as SIGHUP asks.
func (r *runCmd) Rescan() {
	if r.tail != nil {
		r.proc.Logger.Info("re-scanning followed paths")
		r.tail.Rescan()
	}
}

// Addr returns the address the admin listener listens on, once Run has
// returned.
func (r *runCmd) Addr() string { return r.http.adminLn.Addr().String() }

// PublicAddr returns the address the public listener listens on, once Run
// has returned; empty without --public-listen.
func (r *runCmd) PublicAddr() string {
	if r.http.publicLn == nil {
		return ""
	}
	return r.http.publicLn.Addr().String()
}

// DebugAddr returns the address the profiles are served on, once Run has
// returned; empty when they are not served.
func (r *runCmd) DebugAddr() string {
	if r.http.debugLn == nil {
		return ""
	}
	return r.http.debugLn.Addr().String()
}

// Close stops reading, commits what was read, shuts the API down and closes
// the database.
func (r *runCmd) Close() error {
	if r.cancel != nil {
		r.cancel()
	}
	r.readers.Wait()
	var errs []error
	if r.done != nil {
		errs = append(errs, <-r.done)
		r.done = nil
	}
	errs = append(errs, r.http.close())
	if r.node != nil {
		r.node.Close() // what it has not shipped waits in the store's outbox
		r.node = nil
	}
	errs = append(errs, r.counting.close())
	return errors.Join(errs...)
}

// absPath is path made absolute, or path if it cannot be.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
