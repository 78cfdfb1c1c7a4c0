package main

// This file is where the program meets package ingest and its two loops,
// and the only one that names them: the pipeline's settings and flags, how
// it is built on the store (run's windows restored), and what the commands
// read of it.

import (
	"errors"
	"flag"
	"log/slog"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/live"
	"github.com/logtally/logtally/ingest/replay"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/status"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/window"
)

// pipelineConfig is the pipeline's settings: run's (the live loop's) or
// replay's, by the flags registered, and what the program derives from the
// others (the sites of the files, the longest line).
type pipelineConfig struct {
	isLive    bool
	forRun    live.Config
	forReplay replay.Config
}

// defaultPipelineConfig returns the pipeline's defaults.
func defaultPipelineConfig() pipelineConfig {
	return pipelineConfig{forRun: live.DefaultConfig(), forReplay: replay.DefaultConfig()}
}

// registerFlags registers the pipeline's flags of run (live) or replay,
// and makes it that command's.
func (p *pipelineConfig) registerFlags(fs *flag.FlagSet, isLive bool) {
	p.isLive = isLive
	if isLive {
		p.forRun.RegisterFlags(fs)
	} else {
		p.forReplay.RegisterFlags(fs)
	}
}

// core returns the settings both loops share, of the command's.
func (p *pipelineConfig) core() *ingest.Config {
	if p.isLive {
		return &p.forRun.Ingest
	}
	return &p.forReplay.Ingest
}

// siteFile is one --site NAME=PATH.
type siteFile = ingest.SiteFile

// siteFiles returns the --site flags, in order.
func (p *pipelineConfig) siteFiles() []siteFile { return p.core().SiteFiles }

// flushLines is --flush-lines.
func (p *pipelineConfig) flushLines() int { return p.core().FlushLines }

// setSites says which site the files of each followed or replayed pattern
// count under ("" for none), and whether lines name their own (--site-field).
func (p *pipelineConfig) setSites(patternSites []string, byField bool) {
	p.core().PatternSites, p.core().ByField = patternSites, byField
}

// multiSite reports whether lines are counted per site: with --site or
// --site-field, or in a store that holds sites (see storedSites).
func (p *pipelineConfig) multiSite() bool {
	return p.core().ByField || p.core().Stored || len(p.core().SiteFiles) > 0
}

// keepSites makes the pipeline count per site without --site or
// --site-field, every line under the default site: the store holds sites.
func (p *pipelineConfig) keepSites() { p.core().Stored = true }

// live makes the pipeline run's: the live loop, which keeps the windows
// and stores them with each commit, so that a restart rebuilds them exactly.
func (p *pipelineConfig) live(maxLine int) {
	p.isLive = true
	p.forRun.Ingest.MaxLine = maxLine
}

// replay makes the pipeline replay's: no window (nothing serves it), lines
// judged by the clock's --max-skew (see newPipeline).
func (p *pipelineConfig) replay(maxLine int) {
	p.isLive = false
	p.forReplay.Ingest.MaxLine = maxLine
}

// validate reports settings that cannot work.
func (p *pipelineConfig) validate() error {
	if p.isLive {
		return p.forRun.Validate()
	}
	return p.forReplay.Validate()
}

// committer is where a pipeline's batches go: the store, or what a test
// puts between them.
type committer = ingest.Committer

// pipelineDeps are what a pipeline is built on.
type pipelineDeps struct {
	format     *parser.Format
	classifier *classify.Classifier
	store      *storage.Store
	commit     committer        // the store, unless a test wraps it
	window     window.Config    // each site's live window; replay takes its MaxSkew
	matcher    *counter.Matcher // nil without counters
	breakdowns *breakdown.Deriver
	counterMax int      // --max-counter-keys: a counter window's paths
	knownSites []string // sites the store holds lines of, with several
	now        func() time.Time
	logger     *slog.Logger
}

// pipeline is the pipeline a command feeds: run's live loop, or replay's
// replayer; the other is nil.
type pipeline struct {
	core *ingest.Core
	*live.Loop
	*replay.Replayer
}

// newPipeline builds the pipeline cfg says on d: for run, its windows
// restored from the store.
func newPipeline(cfg pipelineConfig, d pipelineDeps) (*pipeline, error) {
	core := ingest.Deps{Format: d.format, Classifier: d.classifier, Counters: d.matcher, Breakdowns: d.breakdowns,
		KnownSites: d.knownSites,
		Now:        d.now, Logger: d.logger}
	if !cfg.isLive {
		rc := cfg.forReplay
		rc.Ingest.MaxSkew = d.window.MaxSkew // replay has no window: lines are judged by --max-skew
		r, err := replay.New(rc, replay.Deps{Deps: core, Store: d.commit})
		if err != nil {
			return nil, err
		}
		return &pipeline{core: r.Core, Replayer: r}, nil
	}
	// Counters that read one history are restored into one window, which
	// they share while they count alike (see live's classes).
	restored := make(map[string]*window.Window)
	deps := live.Deps{Deps: core, Store: d.commit,
		NewWindow: func(site string, end time.Time) (*window.Window, error) {
			if !logtally.IsCounterSite(site) {
				return siteWindow(cfg, d, site, end) // a site's, or a breakdown's, which shares none
			}
			held := d.store.Shares(site)
			if w, ok := restored[held]; ok {
				return w, nil
			}
			w, err := siteWindow(cfg, d, site, end)
			restored[held] = w
			return w, err
		}}
	if !cfg.multiSite() {
		w, err := live.Restore(d.store, d.window, cfg.forRun.Anchor, d.now())
		if err != nil {
			return nil, err
		}
		deps.Window = w
	}
	l, err := live.New(cfg.forRun, deps)
	if err != nil {
		return nil, err
	}
	return &pipeline{core: l.Core, Loop: l}, nil
}

// siteWindow restores a site's live window from the store, or starts an
// empty one for a site the store does not hold yet. Every window ends at
// end, but for the all-sites view's, the first, which ends where --window-end
// says: with log, at the newest line stored of any site, or with none at
// end until the first line.
func siteWindow(cfg pipelineConfig, d pipelineDeps, site string, end time.Time) (*window.Window, error) {
	anchor := live.AnchorClock
	if site == logtally.AllSites {
		anchor = cfg.forRun.Anchor
	}
	wcfg := d.window
	if logtally.IsDimensionSite(site) {
		// A counter's paths are its keys: as many as --max-counter-keys,
		// every one of them in its snapshots, for ratios, with their
		// distinct visitors. A breakdown's are too.
		wcfg.MaxPaths, wcfg.Pages, wcfg.PathVisitors = d.counterMax, d.counterMax, true
	}
	// A counter that counts as another does reads that one's history,
	// its checkpointed seconds among it (storage.Store.Shares).
	if st, ok := d.store.Site(d.store.Shares(site)); ok {
		return live.Restore(st, wcfg, anchor, end)
	}
	return window.New(wcfg, end), nil // with --window-end log, the first line moves it
}

// Lines returns how many lines the pipeline has read.
func (p *pipeline) Lines() int64 { return p.core.Lines() }

// Commits returns how many commits have succeeded.
func (p *pipeline) Commits() int64 { return p.core.Commits() }

// statusDeps returns deps with the live loop the status reports on.
func (p *pipeline) statusDeps(deps status.Deps) status.Deps {
	deps.Pipeline = p.Loop
	return deps
}

// isMostlyRejected reports whether a replay stopped because its first
// lines were nearly all rejected: it then committed nothing.
func isMostlyRejected(err error) bool { return errors.Is(err, ingest.ErrMostlyRejected) }
