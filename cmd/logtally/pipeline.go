package main

// This file is where the program meets package ingest, and the only one
// that names it: the pipeline's settings and flags, how it is built on the
// store (its windows restored), and what the commands read of it.

import (
	"errors"
	"flag"
	"log/slog"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/status"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/window"
)

// pipelineConfig is the pipeline's settings: its flags, and what the
// program derives from the others (the mode, the sites of the files, the
// longest line).
type pipelineConfig struct{ c ingest.Config }

// defaultPipelineConfig returns the pipeline's defaults.
func defaultPipelineConfig() pipelineConfig { return pipelineConfig{ingest.DefaultConfig()} }

// registerFlags registers the pipeline's flags of run (live) or replay.
func (p *pipelineConfig) registerFlags(fs *flag.FlagSet, live bool) { p.c.RegisterFlags(fs, live) }

// siteFile is one --site NAME=PATH.
type siteFile struct{ Site, Path string }

// siteFiles returns the --site flags, in order.
func (p *pipelineConfig) siteFiles() []siteFile {
	files := make([]siteFile, len(p.c.SiteFiles))
	for i, f := range p.c.SiteFiles {
		files[i] = siteFile{f.Site, f.Path}
	}
	return files
}

// flushLines is --flush-lines.
func (p *pipelineConfig) flushLines() int { return p.c.FlushLines }

// setSites says which site the files of each followed or replayed pattern
// count under ("" for none), and whether lines name their own (--site-field).
func (p *pipelineConfig) setSites(patternSites []string, byField bool) {
	p.c.PatternSites, p.c.ByField = patternSites, byField
}

// multiSite reports whether lines are counted per site: with --site or
// --site-field.
func (p *pipelineConfig) multiSite() bool { return p.c.ByField || len(p.c.SiteFiles) > 0 }

// live sets the mode of run: the window is kept and stored with each
// commit, so that a restart rebuilds it exactly.
func (p *pipelineConfig) live(maxLine int) {
	p.c.PersistWindow, p.c.NoWindow, p.c.MaxLine = true, false, maxLine
}

// replay sets the mode of replay: no window (nothing serves it), and the
// clock is the log's, a replay having no "now" of its own.
func (p *pipelineConfig) replay(maxLine int) {
	p.c.Anchor = ingest.AnchorLog
	p.c.PersistWindow, p.c.NoWindow, p.c.MaxLine = false, true, maxLine
}

// validate reports settings that cannot work.
func (p *pipelineConfig) validate() error { return p.c.Validate() }

// committer is where a pipeline's batches go: the store, or what a test
// puts between them.
type committer = ingest.Committer

// pipelineDeps are what a pipeline is built on.
type pipelineDeps struct {
	format     *parser.Format
	classifier *classify.Classifier
	store      *storage.Store
	commit     committer        // the store, unless a test wraps it
	window     window.Config    // each site's live window
	matcher    *counter.Matcher // nil without counters
	counterMax int              // --max-counter-keys: a counter window's paths
	knownSites []string         // sites the store holds lines of, with several
	now        func() time.Time
	logger     *slog.Logger
}

// pipeline is the ingest pipeline a command feeds: run's live loop, or
// replay's.
type pipeline struct{ *ingest.Pipeline }

// newPipeline builds the pipeline cfg says on d, its windows restored from
// the store.
func newPipeline(cfg pipelineConfig, d pipelineDeps) (*pipeline, error) {
	deps := ingest.Deps{Format: d.format, Classifier: d.classifier, Store: d.commit, Now: d.now, Logger: d.logger}
	newWindow := func(site string, end time.Time) (*window.Window, error) {
		return siteWindow(cfg, d, site, end)
	}
	if d.matcher != nil {
		deps.Counters, deps.NewWindow = d.matcher, newWindow
	}
	if cfg.multiSite() {
		deps.KnownSites, deps.NewWindow = d.knownSites, newWindow
	} else {
		w, err := ingest.Restore(d.store, d.window, cfg.c.Anchor, d.now())
		if err != nil {
			return nil, err
		}
		deps.Window = w
	}
	p, err := ingest.New(cfg.c, deps)
	if err != nil {
		return nil, err
	}
	return &pipeline{p}, nil
}

// siteWindow restores a site's live window from the store, or starts an
// empty one for a site the store does not hold yet. Every window ends at
// end, but for the all-sites view's, the first, which ends where --window-end
// says: with log, at the newest line stored of any site.
func siteWindow(cfg pipelineConfig, d pipelineDeps, site string, end time.Time) (*window.Window, error) {
	anchor := ingest.AnchorClock
	if site == logtally.AllSites {
		anchor = cfg.c.Anchor
	}
	wcfg := d.window
	if logtally.IsCounterSite(site) {
		// A counter's paths are its keys: as many as --max-counter-keys,
		// every one of them in its snapshots, for ratios, with their
		// distinct visitors.
		wcfg.MaxPaths, wcfg.Pages, wcfg.PathVisitors = d.counterMax, d.counterMax, true
	}
	if st, ok := d.store.Site(site); ok {
		return ingest.Restore(st, wcfg, anchor, end)
	}
	if anchor == ingest.AnchorLog {
		end = time.Unix(0, 0) // nothing stored: the first line moves it
	}
	return window.New(wcfg, end), nil
}

// statusDeps returns deps with the pipeline the status reports on.
func (p *pipeline) statusDeps(deps status.Deps) status.Deps {
	deps.Pipeline = p.Pipeline
	return deps
}

// isMostlyRejected reports whether a replay stopped because its first
// lines were nearly all rejected: it then committed nothing.
func isMostlyRejected(err error) bool { return errors.Is(err, ingest.ErrMostlyRejected) }
