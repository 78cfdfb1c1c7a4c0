// Package ingest is what the live loop (package ingest/live) and replay
// (package ingest/replay) share: the goroutine-free core that turns chunks
// of log lines into counts, ready to commit.
//
// A line is parsed once, routed once and applied once. Parse turns a
// chunk's lines into a Result of hits, and only reads the Core, so replay
// parses on every core at once. Route finds each hit's site (and the named
// counters it counts) once; Apply adds every hit to the batch of the
// all-sites view, of its site and of its counters, on the one goroutine
// that owns the batches, so the hot path takes no locks. Replay keeps no
// window and applies a result whole; the live loop applies it hit by hit,
// each first to its windows and then to the batches (AllSites, CountMatch,
// AddToSite), checkpointing the seconds of the hits its window holds.
//
// Who owns the goroutine decides when the batches (Pending) are committed,
// and reports how it went (Committed): the live loop, which retries while
// a commit fails, or replay, which commits on a goroutine of its own while
// the next lines are applied. The Core keeps the figures both report:
// lines read, parsed and rejected, samples of the rejected lines, commits,
// and the verdict on the first lines (Judge).
package ingest

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
)

// Config is what the live loop and replay share: plain values, set from
// flags or by the program. Zero fields take their defaults in New.
type Config struct {
	FlushInterval time.Duration // longest time between commits
	FlushLines    int           // most lines in one commit
	MaxLine       int           // longer lines are rejected: the tailer's limit
	// MaxSkew is how far ahead of the clock a line may be dated: further
	// ahead, it is rejected (ErrTooNew). The live loop sets it to its
	// window's; replay, which has none, takes --max-skew.
	MaxSkew   time.Duration
	NoSamples bool // do not keep the last rejected lines (run's --no-samples)
	// HitByHit says that results are applied hit by hit, each judged
	// against live windows (the live loop): a breakdown's key then comes
	// with each hit, as a match, and a line that is no page view is given
	// its visitor when a breakdown counts it (status, not-found), for the
	// windows count each key's distinct visitors. Without it (replay,
	// which applies a result whole, keeps no window and stores no visitor
	// of a breakdown), the parsers count a chunk's breakdown keys by key
	// and minute as they derive them (see tallies.go), and spare the hash.
	HitByHit bool
	// ShowRejected keeps the samples of rejected lines as they were read
	// rather than redacted (run's --show-rejected-lines); the log's are
	// redacted still.
	ShowRejected bool

	// Sites: where a line's site comes from. PatternSites[i] is the site
	// of the files of pattern i (tailer.Chunk.Pattern), "" for none; a
	// line of no mapped file is counted under its host (Record.VHost) with
	// ByField, else under logtally.DefaultSite. With neither, the core
	// counts one site, DefaultSite, and nothing else. The program sets them
	// from SiteFiles and the parser's --site-field.
	PatternSites []string
	ByField      bool
	// Stored counts per site although no line names one and no file is
	// mapped: the store holds sites, counted by an earlier run or replay,
	// whose history and windows go on being served; every line counts
	// under DefaultSite, and in the all-sites view.
	Stored    bool
	SiteFiles []SiteFile // --site NAME=PATH, in order
	// MaxSites is the most sites counted apart; lines of sites first seen
	// past it count under logtally.OtherSite.
	MaxSites int
}

// Multi reports whether the configuration counts several sites.
func (c Config) Multi() bool {
	return c.ByField || c.Stored || slices.ContainsFunc(c.PatternSites, func(s string) bool { return s != "" })
}

// DefaultConfig returns the defaults: what the flags start at, and what New
// gives a zero field.
func DefaultConfig() Config {
	return Config{FlushInterval: time.Second, FlushLines: 50_000, MaxLine: tailer.DefaultMaxLine, MaxSites: DefaultMaxSites}
}

// RegisterFlags sets c to the defaults and registers the flags of both
// commands that count lines, run and replay: when to commit, and the
// sites. MaxLine, MaxSkew and the sites of the patterns are the program's
// to set; NoSamples is the live loop's flag.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.DurationVar(&c.FlushInterval, "flush-interval", c.FlushInterval, "longest time between commits")
	fs.IntVar(&c.FlushLines, "flush-lines", c.FlushLines, "most lines in one commit")
	fs.Var((*siteFiles)(&c.SiteFiles), "site",
		"count every line of the files `NAME=PATH` names (a path or a glob) under site NAME; repeatable")
	fs.IntVar(&c.MaxSites, "max-sites", c.MaxSites, "most sites counted apart; lines of sites first seen past it count under (other)")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("flush interval %s: must not be negative", c.FlushInterval))
	}
	if c.MaxSites < 0 {
		errs = append(errs, fmt.Errorf("--max-sites %d: must not be negative", c.MaxSites))
	}
	if c.FlushLines < 0 || c.MaxLine < 0 {
		errs = append(errs, fmt.Errorf("flush lines %d, max line %d: must not be negative", c.FlushLines, c.MaxLine))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with its zero fields set to the defaults (but
// MaxSkew, for which zero means none, as for a window).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.FlushInterval <= 0 {
		c.FlushInterval = d.FlushInterval
	}
	if c.FlushLines <= 0 {
		c.FlushLines = d.FlushLines
	}
	if c.MaxLine <= 0 {
		c.MaxLine = d.MaxLine
	}
	if c.MaxSites <= 0 {
		c.MaxSites = d.MaxSites
	}
	return c
}

// Deps are what a Core works with.
type Deps struct {
	Format     *parser.Format       // parses lines
	Classifier *classify.Classifier // turns parsed lines into hits
	// Counters, if not nil, tells which named counters each line counts;
	// each is counted as a site of its own (see logtally.CounterSite).
	Counters *counter.Matcher
	// Breakdowns, if not nil, derives each line's breakdown keys; each
	// breakdown on is counted as a counter of its own, numbered after the
	// declared ones (see breakdowns.go), as a site named
	// logtally.BreakdownSite.
	Breakdowns *breakdown.Deriver
	KnownSites []string // sites the store holds, counted against MaxSites
	// NewSite, if not nil, is told of each site and counter before it is
	// counted: the all-sites view (or with one site, DefaultSite) first,
	// then KnownSites and the counters, in New, then each site when its
	// first line comes. The live loop gives it its window there. A site
	// it fails is not counted: its lines count in the all-sites view only.
	NewSite func(*Site) error
	Now     func() time.Time // the clock; time.Now if nil
	Logger  *slog.Logger     // discards if nil
}

// Committer is where batches go: *storage.Store, or a test's failing double.
// The batches of one call, one per site, commit together or not at all.
type Committer interface {
	Commit(...*tally.Batch) error
}

// Core parses, routes and applies lines, and keeps the figures of what it
// did. Parse may be called from any goroutine; Route, Apply, Judge and the
// batches of Pending belong to one; the figures may be read from any.
type Core struct {
	Counts       // lines read, parsed, rejected
	rejects      // samples of the rejected lines
	commitRecord // how the commits went

	parse  lineParser
	router router
	cfg    Config
	now    func() time.Time
	// judged is set once the first lines have had their verdict (see
	// Judge).
	judged bool
}

// New returns a core configured by cfg, with deps. It adds the all-sites
// view, the known sites and the counters (telling deps.NewSite of each),
// and fails if one of them cannot be added.
func New(cfg Config, deps Deps) (*Core, error) {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	c := &Core{cfg: cfg, now: deps.Now,
		rejects:      rejects{off: cfg.NoSamples, whole: cfg.ShowRejected, now: deps.Now, log: deps.Logger},
		commitRecord: commitRecord{now: deps.Now, log: deps.Logger, seconds: newCommitHistogram()},
		parse: lineParser{format: deps.Format, classifier: deps.Classifier, matcher: deps.Counters,
			maxLine: cfg.MaxLine, maxSkew: int64(cfg.MaxSkew / time.Second), multi: cfg.Multi(), byField: cfg.ByField,
			patternSite: patternSites(cfg.PatternSites), now: deps.Now},
	}
	declared := 0
	if deps.Counters != nil {
		declared = len(deps.Counters.Counters())
	}
	c.parse.breakdowns.init(deps.Breakdowns, declared, cfg.HitByHit)
	c.Counts.init(deps.Counters, len(c.parse.breakdowns.list))
	if err := c.router.init(cfg, deps); err != nil {
		return nil, err
	}
	return c, nil
}

// Multi reports whether the core counts several sites apart.
func (c *Core) Multi() bool { return c.router.multi }

// Config returns the core's configuration, its defaults set.
func (c *Core) Config() Config { return c.cfg }
