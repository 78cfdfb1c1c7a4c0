// Package replay reads logs to their end as fast as the cores allow: it
// parses chunks on every core, applies the results in the order the chunks
// came in (through the core, package ingest), and commits on a goroutine of
// its own while the next lines are applied, so that a position is only
// committed once every line before it, in every file, is counted, and a
// commit carries the lines of every file up to the positions it stores.
//
// A replay keeps no window: nothing serves it. It commits through
// ingest.Committer (and ingest's Preparer when the store is one), so it
// links neither the store nor the window.
package replay

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/tally"
)

// Config is how a Replayer runs: plain values, set from flags or by the
// program. Zero fields take their defaults in New.
type Config struct {
	Ingest ingest.Config
	// ApplyShards is --apply-shards, which has no effect: the apply shards
	// it set gave nothing on the cores measured (1 and 2) and were cut. It
	// is still accepted, and checked, so that a command line or a unit
	// that sets it still runs; New logs once that it is ignored.
	ApplyShards int
}

// DefaultConfig returns the defaults: what the flags start at.
func DefaultConfig() Config { return Config{Ingest: ingest.DefaultConfig()} }

// RegisterFlags sets c to the defaults and registers replay's pipeline
// flags on fs: the core's, and --apply-shards.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	c.Ingest.RegisterFlags(fs)
	fs.IntVar(&c.ApplyShards, "apply-shards", c.ApplyShards,
		"no effect, kept so that command lines that set it still run (replay applies the parsed lines on one goroutine)")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.ApplyShards < -1 || c.ApplyShards > 256 {
		errs = append(errs, fmt.Errorf("--apply-shards %d: want 0 (by the cores), -1 (none) or 1 to 256", c.ApplyShards))
	}
	return errors.Join(append(errs, c.Ingest.Validate())...)
}

// Deps are what a Replayer works with: the core's (whose clock is the one
// lines are judged by, MaxSkew), and the store.
type Deps struct {
	ingest.Deps
	// Store is where batches go; a Preparer's commits are prepared while
	// the one before writes.
	Store ingest.Committer
}

// Preparer is a Committer that can prepare a commit before writing it
// (*storage.Store): the per-line work of a commit (sorting, sketches, page
// counts) then runs while the commit before writes. The commit it returns
// writes what was prepared.
type Preparer interface {
	Prepare(...*tally.Batch) (commit func() error, err error)
}

// Replayer replays chunks into the store. Its figures may be read from any
// goroutine.
type Replayer struct {
	*ingest.Core

	store ingest.Committer
	pool  sync.Pool // of *ingest.Result, between the parsers and the applier
	// flight is the commit under way, if one is; free are emptied
	// batches, by site, for the next lines while one commits.
	flight *flight
	free   map[*ingest.Site][]*tally.Batch
}

// New returns a replayer that runs as cfg says, with deps.
func New(cfg Config, deps Deps) (*Replayer, error) {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	core, err := ingest.New(cfg.Ingest, deps.Deps)
	if err != nil {
		return nil, err
	}
	if cfg.ApplyShards != 0 {
		deps.Logger.Warn("--apply-shards has no effect: replay applies the parsed lines on one goroutine; remove it",
			"apply_shards", cfg.ApplyShards)
	}
	return &Replayer{Core: core, store: deps.Store, free: make(map[*ingest.Site][]*tally.Batch)}, nil
}
