// Package live is the live loop: it follows chunks as the tailer reads
// them, counts each line in the live windows and in the batches (through
// the core, package ingest), commits the batches every flush interval
// with the windows' per-second state, and publishes the windows'
// snapshots for the API.
//
// One goroutine, Run's, owns the windows and the batches, so the hot path
// takes no locks; readers see a window only through the snapshots it
// publishes (Snapshot, SiteSnapshot). While a commit fails, Run stops
// taking chunks, so that the log keeps the lines, and retries. At start,
// Restore rebuilds a window from what the store kept, so that a restart
// continues the counts. The loop commits through ingest.Committer and
// restores through Checkpoint, so it links nothing of the store.
package live

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/tally"
	"github.com/logtally/logtally/window"
)

// Clock anchors for Config.Anchor.
const (
	// AnchorClock ends the window at the current time: the live view.
	AnchorClock = "clock"
	// AnchorLog ends the window at the newest line's timestamp: the view of
	// a log as it was when it was written, for archives and demos.
	AnchorLog = "log"
)

// Config is how a Loop runs: plain values, set from flags or by the
// program. Zero fields take their defaults in New.
type Config struct {
	Ingest          ingest.Config
	Anchor          string        // AnchorClock or AnchorLog
	PublishInterval time.Duration // longest time between two snapshots of the window
}

// DefaultConfig returns the defaults: what the flags start at, and what New
// gives a zero field.
func DefaultConfig() Config {
	return Config{Ingest: ingest.DefaultConfig(), Anchor: AnchorClock, PublishInterval: 100 * time.Millisecond}
}

// RegisterFlags sets c to the defaults and registers run's pipeline flags
// on fs: the core's, what the window ends at, and the rejected-line
// samples.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	c.Ingest.RegisterFlags(fs)
	fs.StringVar(&c.Anchor, "window-end", c.Anchor,
		"what the window ends at: clock (now) or log (the newest line's time, for archives)")
	fs.BoolVar(&c.Ingest.NoSamples, "no-samples", c.Ingest.NoSamples, "do not keep the last rejected lines for /api/v1/status")
	fs.BoolVar(&c.Ingest.ShowRejected, "show-rejected-lines", c.Ingest.ShowRejected,
		"show the last rejected lines in /api/v1/status and the dashboard (admin listener only) as they were read, client addresses, user names and query strings included, rather than redacted; the log's stay redacted")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.Anchor != "" && c.Anchor != AnchorClock && c.Anchor != AnchorLog {
		errs = append(errs, fmt.Errorf("--window-end %q: want %s or %s", c.Anchor, AnchorClock, AnchorLog))
	}
	if c.Ingest.NoSamples && c.Ingest.ShowRejected {
		errs = append(errs, errors.New("--show-rejected-lines with --no-samples: no rejected line is kept to show; drop one of them"))
	}
	if c.PublishInterval < 0 {
		errs = append(errs, fmt.Errorf("publish interval %s: must not be negative", c.PublishInterval))
	}
	return errors.Join(append(errs, c.Ingest.Validate())...)
}

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Anchor == "" {
		c.Anchor = d.Anchor
	}
	if c.PublishInterval <= 0 {
		c.PublishInterval = d.PublishInterval
	}
	return c
}

// Deps are what a Loop works with: the core's (its NewSite is the loop's
// own, which gives each site its window), and the windows and the store.
type Deps struct {
	ingest.Deps
	// Window is the live window with one site. From New on, the loop's
	// goroutine is the one that changes it; others only read its Current
	// snapshot. With several sites (Config.Ingest.Multi) it is not used:
	// NewWindow gives each site's.
	Window *window.Window
	// NewWindow returns the live window of a site, restored from the store
	// (see Restore), ending at end; required with several sites or named
	// counters. New asks for logtally.AllSites's, each known site's and
	// each counter's at once, and for other sites' when their first line
	// comes.
	NewWindow func(site string, end time.Time) (*window.Window, error)
	Store     ingest.Committer // where batches go
}

// Loop is the live loop. Its figures, and the snapshots of its windows,
// may be read from any goroutine.
type Loop struct {
	*ingest.Core

	cfg       Config
	store     ingest.Committer
	wins      windows
	now       func() time.Time
	log       *slog.Logger
	sc        ingest.Scratch // Run's parsing scratch
	res       ingest.Result  // Run's reusable result
	batches   []*tally.Batch // commit's, reused
	publishes int            // publish calls, for the counters' pace
}

// New returns a loop that runs as cfg says, with deps. It restores the
// window of each of deps.KnownSites, of the all-sites view and of each
// counter, and fails if one cannot be.
func New(cfg Config, deps Deps) (*Loop, error) {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	l := &Loop{cfg: cfg, store: deps.Store, now: deps.Now, log: deps.Logger}
	if err := l.wins.init(cfg, deps); err != nil {
		return nil, err
	}
	// The window's end is what a line is judged by: a line further ahead
	// of the clock than it holds is rejected as it is parsed.
	cfg.Ingest.MaxSkew = l.wins.all.MaxSkew()
	// The windows judge hits one by one, and count each breakdown key's
	// distinct visitors.
	cfg.Ingest.HitByHit = true
	deps.NewSite = l.wins.newSite
	core, err := ingest.New(cfg.Ingest, deps.Deps)
	if err != nil {
		return nil, err
	}
	l.Core, l.cfg.Ingest = core, core.Config() // its defaults set
	return l, nil
}

// Snapshot returns the live window of all sites together: the latest
// snapshot, never waiting.
func (l *Loop) Snapshot() *logtally.Snapshot { return l.wins.all.Current() }

// Published returns a channel that the next publish of a new Snapshot
// closes (window.Window.Published): what the API's event stream waits on.
func (l *Loop) Published() <-chan struct{} { return l.wins.all.Published() }
