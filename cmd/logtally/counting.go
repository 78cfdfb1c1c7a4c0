package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/keyring"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// countConfig is what run and replay share: which logs, how their lines
// are read, parsed, classified and counted, and the database they are
// counted into.
type countConfig struct {
	Store    storage.Config
	Parser   parser.Config
	Rules    classify.Config
	Tailer   tailer.Config
	Pipeline pipelineConfig
	Counters counter.Config
	// Breakdowns are the breakdowns each line is counted by, besides.
	Breakdowns breakdown.Config
	Keys       keyring.Config
	Log        LogConfig
	// Window is run's live window; replay, which keeps none, takes only
	// its MaxSkew.
	Window window.Config
	Files  []string // the FILE arguments
	// patterns are what is followed or replayed: Files, then the paths of
	// --site (globs expanded, for replay); see sitePatterns.
	patterns []string
	// wrapStore, if set by a test, stands between the pipeline and the
	// store.
	wrapStore func(committer) committer
}

// defaultCountConfig returns the defaults of what the flags do not set.
func defaultCountConfig() countConfig {
	return countConfig{Window: window.DefaultConfig(), Rules: classify.DefaultConfig(), Pipeline: defaultPipelineConfig()}
}

// registerFlags registers the flags run (live) and replay share on fs.
func (c *countConfig) registerFlags(fs *flag.FlagSet, live bool) {
	c.Store.RegisterFlags(fs)
	c.Parser.RegisterFlags(fs)
	c.Rules.RegisterFlags(fs)
	c.Pipeline.registerFlags(fs, live)
	c.Counters.RegisterFlags(fs)
	c.Breakdowns.RegisterFlags(fs)
	c.Keys.RegisterFlags(fs)
	c.Log.RegisterFlags(fs)
	c.Tailer.RegisterFlags(fs, live)
}

// validate reports settings that cannot work, once the command has set
// the pipeline's mode.
func (c *countConfig) validate() error {
	if _, err := c.Parser.Compile(); err != nil {
		if c.Parser.NginxConf != "" {
			return fmt.Errorf("--nginx-conf: %w", err)
		}
		return fmt.Errorf("--format: %w", err)
	}
	var dbErr error
	if c.Store.Path != "" {
		dbErr = checkDBPath(c.Store.Path)
	}
	return errors.Join(c.Window.Validate(), c.Rules.Validate(), c.Pipeline.validate(), c.Tailer.Validate(),
		c.Store.Validate(), dbErr, c.Counters.Validate(), c.Breakdowns.Validate())
}

// counting is what run and replay open: the database, and the pipeline
// that counts lines into it.
type counting struct {
	store    *storage.Store
	keys     *keyring.Ring // nil when a test fixes the key
	pipeline *pipeline
	matcher  *counter.Matcher // nil without counters
	deriver  *breakdown.Deriver
}

// beforeCount is what a command does once the store is open, before a
// line is counted (fleet mode's checks); nil: nothing.
type beforeCount func(ctx context.Context, store *storage.Store) error

// open opens the store and the visitor keys, and on them the pipeline (its
// live windows restored) that counts into the store, once before has run.
// On an error, it closes what it opened.
func (c *countConfig) open(ctx context.Context, proc *process, before beforeCount) (*counting, error) {
	c.Parser.Logger = proc.Logger // told once if the format falls back to gonx
	format, err := c.Parser.Compile()
	if err != nil {
		return nil, err
	}
	store, err := storage.Open(c.Store, proc.Now)
	if err != nil {
		return nil, storeFix(err, c.Store.Path)
	}
	store.LogRetention(proc.Logger)
	if store.ZoneAdopted() {
		proc.Logger.Info("the database, made by an older logtally, stored no time zone: its days are cut in this one from now on",
			"db", c.Store.Path, "tz", store.Zone())
	}
	if store.SaltDropped() {
		proc.Logger.Info("visitor-hash salt of an older logtally destroyed: visitors are now hashed with a key a day, "+
			"and one seen both before and after this start within the live window counts twice", "db", c.Store.Path)
	}
	logSetsMoved(proc.Logger, store, c.Store.Path)
	cn := &counting{store: store}
	keys, err := c.openKeys(proc, cn)
	if err == nil && before != nil {
		err = before(ctx, store)
	}
	if err == nil {
		cn.pipeline, err = c.newPipeline(proc, cn, format, keys)
	}
	if err != nil {
		cn.close()
		// Damage may show only when the windows are restored.
		return nil, storeFix(err, c.Store.Path)
	}
	return cn, nil
}

// newPipeline builds the pipeline that counts lines of format into cn's
// store.
func (c *countConfig) newPipeline(proc *process, cn *counting, format *parser.Format, keys classify.Keys) (*pipeline, error) {
	classifier, err := c.classifier(proc, format, keys)
	if err != nil {
		return nil, err
	}
	deps := pipelineDeps{format: format, classifier: classifier, store: cn.store, commit: cn.store,
		window: c.Window, counterMax: c.Counters.MaxKeys, now: proc.Now, logger: proc.Logger}
	if c.wrapStore != nil {
		deps.commit = c.wrapStore(cn.store)
	}
	if cn.keys != nil {
		deps.commit = keyedCommitter{keys: cn.keys, next: deps.commit, log: proc.Logger}
	}
	if len(c.Counters.Counters) > 0 {
		if cn.matcher, err = counter.New(c.Counters); err != nil {
			return nil, err
		}
		deps.matcher = cn.matcher
		if err := storeCounters(cn.store, cn.matcher); err != nil {
			return nil, err
		}
	}
	if cn.deriver, err = c.breakdowns(proc, cn.store, format.HasRequestTime()); err != nil {
		return nil, err
	}
	deps.breakdowns = cn.deriver
	if !c.Pipeline.multiSite() && holdsSites(cn.store) {
		c.Pipeline.keepSites()
		proc.Logger.Info("the database holds several sites: they are kept apart, and these lines count under site default "+
			"and in the all-sites view (give --site-field or --site to count them under their own)", "db", c.Store.Path)
	}
	if c.Pipeline.multiSite() {
		if err := allSitesView(cn.store, proc.Logger, c.Store.Path); err != nil {
			return nil, err
		}
		if deps.knownSites, err = storedSites(cn.store); err != nil {
			return nil, err
		}
	}
	return newPipeline(c.Pipeline, deps)
}

// breakdowns returns the deriver of the breakdowns on, and gives each of
// them its site in the store before a line is counted, so that each has a
// history from the start, of zeros until it counts, as counters do.
func (c *countConfig) breakdowns(proc *process, store *storage.Store, timed bool) (*breakdown.Deriver, error) {
	d, err := breakdown.New(c.Breakdowns, breakdown.Deps{Location: store.Location(), Logger: proc.Logger, Timed: timed})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, b := range d.Breakdowns() {
		names = append(names, logtally.BreakdownSite(b.String()))
	}
	if err := store.AddSites(names...); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// classifier returns what tells page views and visitors in lines of
// format: a format without the user agent cannot tell crawlers.
func (c *countConfig) classifier(proc *process, format *parser.Format, keys classify.Keys) (*classify.Classifier, error) {
	rules := c.Rules
	if !format.HasUserAgent() {
		rules.NoUserAgent = true
		proc.Logger.Info("the log format has no user agent: crawlers cannot be told from people and count as visitors",
			"format", format.String())
	}
	return classify.New(rules, keys)
}

// ensureLogger gives proc the logger --log-format and --log-level ask for,
// writing to its Stderr, unless a test gave it one.
func (c *countConfig) ensureLogger(proc *process) error {
	if proc.Logger != nil {
		return nil
	}
	var err error
	proc.Logger, err = c.Log.Logger(proc.Stderr)
	return err
}

// close closes the store, once.
func (cn *counting) close() error {
	if cn == nil || cn.store == nil {
		return nil
	}
	err := cn.store.Close()
	cn.store = nil
	if cn.deriver != nil {
		err = errors.Join(err, cn.deriver.Close())
		cn.deriver = nil
	}
	if cn.keys != nil {
		err = errors.Join(err, cn.keys.Close())
		cn.keys = nil
	}
	return err
}

// logSetsMoved says what Open did to the visitor sets of a file an older
// logtally made: moved into their minutes, and any it dropped, whose
// minutes keep their counts and sketches (see storage.Store.SetsMoved).
func logSetsMoved(log *slog.Logger, store *storage.Store, path string) {
	moved, dropped, first := store.SetsMoved()
	if moved > 0 {
		log.Info("the visitor sets of an older logtally's database moved into their minutes", "db", path, "sets", moved)
	}
	if dropped > 0 {
		log.Warn("visitor sets of an older logtally's database dropped, as not standing for their minutes: "+
			"those minutes keep their counts, and count later lines' visitors in their sketches", "db", path,
			"dropped", dropped, "first", first)
	}
}
