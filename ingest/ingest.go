// Package ingest runs the pipeline from log chunks to counts: it parses each
// line, classifies it, adds it to the live window and to a storage batch, and
// commits the batch together with the read positions of the lines in it.
//
// One goroutine owns the window and the batch, so the hot path takes no
// locks. Readers see the window only through the snapshots it publishes.
// Parsing, the expensive part, is separate from applying: Replay parses
// chunks on every core and applies the results in order on that goroutine.
//
// At start, Restore rebuilds the live window from what the store kept, so a
// restart continues the counts. A Pipeline reports what it did as
// Prometheus metrics (it is a prometheus.Collector) and, after a replay, as
// a Summary.
package ingest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
	"github.com/logtally/logtally/window"
	"github.com/prometheus/client_golang/prometheus"
)

// Clock anchors for Config.Anchor.
const (
	// AnchorClock ends the window at the current time: the live view.
	AnchorClock = "clock"
	// AnchorLog ends the window at the newest line's timestamp: the view of
	// a log as it was when it was written, for archives and demos.
	AnchorLog = "log"
)

// Config is how a Pipeline runs: plain values, set from flags or by the
// program. Zero fields take their defaults in New.
type Config struct {
	Anchor          string        // AnchorClock or AnchorLog
	FlushInterval   time.Duration // longest time between commits
	FlushLines      int           // most lines in one commit
	PublishInterval time.Duration // longest time between two snapshots of the window
	NoSamples       bool          // do not keep the last rejected lines
	// PersistWindow stores the live window's per-second state with each
	// commit, so that a restart rebuilds the window exactly (see Restore).
	// Replay, which has no live window to serve, leaves it off.
	PersistWindow bool
	// NoWindow keeps no live window: Replay, whose window nothing serves,
	// then only counts into batches (and rejects lines too far ahead of
	// the clock, as it always does).
	NoWindow bool
	MaxLine  int // longer lines are rejected: the tailer's limit
	// ApplyShards is how many goroutines apply a replay's hits to its
	// batches (see shard.go): 0 picks by the cores, below 0 none (the
	// goroutine that orders the results applies them).
	ApplyShards int
	// CommitsInFlight is how many commits a replay may have under way at
	// once, prepared on several cores while the one before writes: 0
	// picks one per apply shard, at least one.
	CommitsInFlight int

	// Sites: where a line's site comes from. PatternSites[i] is the site
	// of the files of pattern i (tailer.Chunk.Pattern), "" for none; a
	// line of no mapped file is counted under its host (Record.VHost) with
	// ByField, else under logtally.DefaultSite. With neither, the pipeline
	// counts one site, DefaultSite, and nothing else. The program sets them
	// from SiteFiles and the parser's --site-field.
	PatternSites []string
	ByField      bool
	SiteFiles    []SiteFile // --site NAME=PATH, in order
	// MaxSites is the most sites counted apart; lines of sites first seen
	// past it count under logtally.OtherSite.
	MaxSites int
}

// multi reports whether the configuration counts several sites.
func (c Config) multi() bool {
	return c.ByField || slices.ContainsFunc(c.PatternSites, func(s string) bool { return s != "" })
}

// DefaultConfig returns the defaults: what the flags start at, and what New
// gives a zero field.
func DefaultConfig() Config {
	return Config{
		Anchor:          AnchorClock,
		FlushInterval:   time.Second,
		FlushLines:      50_000,
		PublishInterval: 100 * time.Millisecond,
		MaxLine:         tailer.DefaultMaxLine,
		MaxSites:        DefaultMaxSites,
	}
}

// RegisterFlags sets c to the defaults and registers the pipeline's flags
// on fs: those of every command, and with live those that matter only to a
// pipeline that serves its window and status (the window's end, the
// rejected-line samples). PersistWindow and MaxLine are the program's to set.
func (c *Config) RegisterFlags(fs *flag.FlagSet, live bool) {
	*c = DefaultConfig()
	fs.DurationVar(&c.FlushInterval, "flush-interval", c.FlushInterval, "longest time between commits")
	fs.IntVar(&c.FlushLines, "flush-lines", c.FlushLines, "most lines in one commit")
	fs.Var((*siteFiles)(&c.SiteFiles), "site",
		"count every line of the files `NAME=PATH` names (a path or a glob) under site NAME; repeatable")
	fs.IntVar(&c.MaxSites, "max-sites", c.MaxSites, "most sites counted apart; lines of sites first seen past it count under (other)")
	if !live {
		fs.IntVar(&c.ApplyShards, "apply-shards", c.ApplyShards,
			"goroutines that apply a replay's parsed lines to its batches, and commits prepared at once: 0 picks by the cores (one per 4, none below 4), -1 none")
	}
	if live {
		fs.StringVar(&c.Anchor, "window-end", c.Anchor,
			"what the window ends at: clock (now) or log (the newest line's time, for archives)")
		fs.BoolVar(&c.NoSamples, "no-samples", c.NoSamples, "do not keep the last rejected lines for /api/v1/status")
	}
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.Anchor != "" && c.Anchor != AnchorClock && c.Anchor != AnchorLog {
		errs = append(errs, fmt.Errorf("--window-end %q: want %s or %s", c.Anchor, AnchorClock, AnchorLog))
	}
	if c.FlushInterval < 0 || c.PublishInterval < 0 {
		errs = append(errs, fmt.Errorf("flush interval %s, publish interval %s: must not be negative",
			c.FlushInterval, c.PublishInterval))
	}
	if c.ApplyShards < -1 || c.ApplyShards > 256 {
		errs = append(errs, fmt.Errorf("--apply-shards %d: want 0 (by the cores), -1 (none) or 1 to 256", c.ApplyShards))
	}
	if c.MaxSites < 0 {
		errs = append(errs, fmt.Errorf("--max-sites %d: must not be negative", c.MaxSites))
	}
	if c.FlushLines < 0 || c.MaxLine < 0 {
		errs = append(errs, fmt.Errorf("flush lines %d, max line %d: must not be negative", c.FlushLines, c.MaxLine))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Anchor == "" {
		c.Anchor = d.Anchor
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = d.FlushInterval
	}
	if c.FlushLines <= 0 {
		c.FlushLines = d.FlushLines
	}
	if c.PublishInterval <= 0 {
		c.PublishInterval = d.PublishInterval
	}
	if c.MaxLine <= 0 {
		c.MaxLine = d.MaxLine
	}
	if c.MaxSites <= 0 {
		c.MaxSites = d.MaxSites
	}
	return c
}

// Deps are what a Pipeline works with.
type Deps struct {
	Format     *parser.Format       // parses lines
	Classifier *classify.Classifier // turns parsed lines into hits
	// Window is the live window. From New on, the pipeline's goroutine is
	// the one that changes it; others only read its Current snapshot.
	// With several sites (Config.ByField or PatternSites) it is not used:
	// NewWindow gives each site's.
	Window *window.Window
	// NewWindow returns the live window of a site, restored from the store
	// (see Restore), ending at end; required with several sites. New asks
	// for logtally.AllSites and each of KnownSites at once, and for other
	// sites when their first line comes.
	NewWindow  func(site string, end time.Time) (*window.Window, error)
	KnownSites []string // sites the store holds, counted against MaxSites
	// Counters, if not nil, tells which named counters each line counts;
	// each is counted as a site of its own (see logtally.CounterSite),
	// whose window NewWindow gives.
	Counters *counter.Matcher
	Store    Committer        // where batches go
	Now      func() time.Time // the clock; time.Now if nil
	Logger   *slog.Logger     // discards if nil
}

// Committer is where batches go: *storage.Store, or a test's failing double.
// The batches of one call, one per site, commit together or not at all.
type Committer interface {
	Commit(...*tally.Batch) error
}

// Pipeline is the ingest loop. Its counters may be read from any goroutine.
type Pipeline struct {
	cfg        Config
	format     *parser.Format
	classifier *classify.Classifier
	store      Committer
	now        func() time.Time
	log        *slog.Logger

	// Sites. all is the window and batch of every line: the one site
	// without several, else logtally.AllSites. The rest belong to the
	// pipeline's goroutine, except index, which readers load.
	multi         bool
	all           *siteState
	list          []*siteState // every site, all included
	byName        map[string]*siteState
	named         int          // sites counted against MaxSites
	touched       []*siteState // sites whose batch holds lines
	patternSite   [][]byte     // site name by Chunk.Pattern; nil: by field or default
	newWindow     func(string, time.Time) (*window.Window, error)
	siteErrLogged bool
	index         atomic.Pointer[siteIndex]
	otherLines    atomic.Int64

	// Named counters: their matcher, and each counter's window and batch,
	// in declaration order. counterWins, by name, is set in New and only
	// read after.
	matcher     *counter.Matcher
	counters    []*siteState
	counterWins map[string]*window.Window
	// countedLines counts each counter's lines since start.
	countedLines []atomic.Int64

	sc        scratch   // Run's parsing scratch
	res       result    // Run's reusable result
	flight    []*flight // Replay's commits under way, oldest first
	shards    *shards   // Replay's apply workers; nil when it applies alone
	publishes int       // publish calls, for the counters' pace
	batches   []*tally.Batch
	last      int64 // newest line second seen, for AnchorLog
	pool      sync.Pool
	// judged is set once the first lines have had their verdict (see
	// judge); only the pipeline's goroutine uses it.
	judged bool

	lines    atomic.Int64
	parsed   atomic.Int64
	rejected []atomic.Int64 // by index in rejectReasons
	lastLog  time.Time
	lastErr  atomic.Pointer[error] // the last commit's error; nil once one succeeds
	commits  atomic.Int64
	lastOK   atomic.Int64 // unix nanoseconds of the last successful commit
	bytes    atomic.Int64 // bytes of lines read

	commitSeconds prometheus.Histogram

	samplesMu sync.Mutex
	samples   []Sample // the last MaxSamples rejected lines, oldest first
}

// Sample is a rejected line kept for operators to look at.
type Sample struct {
	Time   time.Time
	Reason string
	Line   string
}

// Limits on rejected-line samples.
const (
	MaxSamples    = 10
	MaxSampleSize = 512
)

// rejectReasons are the parser reasons, the window's lines too far ahead and
// the tailer's long lines, with a catch-all last.
var rejectReasons = append(append([]error{}, parser.Reasons...), window.ErrTooNew, tailer.ErrLongLine, errOther)

var (
	errOther    = errors.New("other")
	tooNewIdx   = len(rejectReasons) - 3
	longLineIdx = len(rejectReasons) - 2
)

// New returns a pipeline that runs as cfg says, with deps. With several
// sites, it restores the window of each of deps.KnownSites and of the
// all-sites view, and fails if one cannot be.
func New(cfg Config, deps Deps) (*Pipeline, error) {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{
		cfg: cfg.withDefaults(), format: deps.Format, classifier: deps.Classifier,
		store: deps.Store, now: deps.Now, log: deps.Logger,
		rejected: make([]atomic.Int64, len(rejectReasons)), commitSeconds: newCommitHistogram(),
		multi: cfg.multi(), byName: make(map[string]*siteState), newWindow: deps.NewWindow,
		matcher: deps.Counters, counterWins: make(map[string]*window.Window),
	}
	if !p.multi {
		if deps.Window == nil {
			return nil, errors.New("ingest: no window")
		}
		p.all = &siteState{name: logtally.DefaultSite, win: deps.Window, batch: tally.NewBatch()}
		p.list = []*siteState{p.all}
		p.byName[p.all.name] = p.all
		p.index.Store(&siteIndex{byName: map[string]*window.Window{p.all.name: p.all.win}, names: []string{p.all.name}})
		return p, p.addCounters()
	}
	if deps.NewWindow == nil {
		return nil, errors.New("ingest: several sites and no NewWindow")
	}
	p.index.Store(&siteIndex{byName: map[string]*window.Window{}})
	var err error
	if p.all, err = p.addSite(logtally.AllSites); err != nil {
		return nil, err
	}
	for _, name := range deps.KnownSites {
		if name == logtally.AllSites || p.byName[name] != nil {
			continue
		}
		if _, err := p.addSite(name); err != nil {
			return nil, err
		}
	}
	p.patternSite = make([][]byte, len(p.cfg.PatternSites))
	for i, name := range p.cfg.PatternSites {
		if name != "" {
			p.patternSite[i] = []byte(name)
		}
	}
	return p, p.addCounters()
}

// addCounters adds the window and batch of every declared counter.
func (p *Pipeline) addCounters() error {
	if p.matcher == nil {
		return nil
	}
	if p.newWindow == nil {
		return errors.New("ingest: counters and no NewWindow")
	}
	for _, c := range p.matcher.Counters() {
		if err := p.addCounter(c.Name); err != nil {
			return err
		}
	}
	p.countedLines = make([]atomic.Int64, len(p.counters))
	return nil
}

// Run consumes chunks until in is closed or ctx is done, then commits what
// is left. While a commit fails, Run stops taking chunks (the log keeps the
// lines) and retries every flush interval.
func (p *Pipeline) Run(ctx context.Context, in <-chan tailer.Chunk) error {
	flush := time.NewTicker(p.cfg.FlushInterval)
	defer flush.Stop()
	publish := time.NewTicker(p.cfg.PublishInterval)
	defer publish.Stop()
	// On the clock, counts also change when a second leaves the window:
	// publish on each second boundary too, so the slide shows at once.
	second := time.NewTimer(untilNextSecond(p.now()))
	defer second.Stop()
	if p.cfg.Anchor != AnchorClock {
		second.Stop()
	}
	src := in
	for {
		select {
		case <-ctx.Done():
			return p.finish()
		case c, ok := <-src:
			if !ok {
				return p.finish()
			}
			p.chunk(c)
			if _, bad := p.judge(false, true); bad != nil {
				p.log.Warn("most lines are rejected", "hint", bad.Error())
			}
			if p.all.batch.Lines() >= p.cfg.FlushLines && p.commit() != nil {
				src = nil // pause reading until a commit succeeds
			}
		case <-flush.C:
			if p.commit() == nil {
				src = in
			}
		case <-publish.C:
			p.publish()
		case <-second.C:
			p.publish()
			second.Reset(untilNextSecond(p.now()))
		}
	}
}

// untilNextSecond is the time from now to the next whole second.
func untilNextSecond(now time.Time) time.Duration {
	return now.Truncate(time.Second).Add(time.Second).Sub(now)
}

func (p *Pipeline) finish() error {
	err := p.commit()
	p.publishes = 0 // the counters' too
	p.publish()
	return err
}

// chunk counts the lines of c on the calling goroutine.
func (p *Pipeline) chunk(c tailer.Chunk) {
	p.parse(c, &p.sc, &p.res)
	p.apply(&p.res)
}

// logRejected logs a bad line at most once a second.
func (p *Pipeline) logRejected(line []byte, err error) {
	if now := time.Now(); now.Sub(p.lastLog) >= time.Second {
		p.lastLog = now
		const max = 256
		if len(line) > max {
			line = line[:max]
		}
		p.log.Warn("rejected line", "reason", err, "line", string(line),
			"rejected_total", p.Rejected())
	}
}

// sample keeps a copy of a rejected line, cut to MaxSampleSize bytes.
func (p *Pipeline) sample(line []byte, err error) {
	if len(line) > MaxSampleSize {
		line = line[:MaxSampleSize]
	}
	s := Sample{Time: p.now(), Reason: err.Error(), Line: strings.ToValidUTF8(string(line), "\uFFFD")}
	p.samplesMu.Lock()
	if len(p.samples) == MaxSamples {
		copy(p.samples, p.samples[1:])
		p.samples = p.samples[:MaxSamples-1]
	}
	p.samples = append(p.samples, s)
	p.samplesMu.Unlock()
}

// Samples returns the last rejected lines, oldest first.
func (p *Pipeline) Samples() []Sample {
	p.samplesMu.Lock()
	defer p.samplesMu.Unlock()
	return slices.Clone(p.samples)
}

// LastCommit returns when a commit last succeeded; zero if none has.
func (p *Pipeline) LastCommit() time.Time {
	if n := p.lastOK.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// BytesRead returns the bytes of lines read.
func (p *Pipeline) BytesRead() int64 { return p.bytes.Load() }

func (p *Pipeline) commit() error {
	if p.all.batch.Empty() {
		return nil // every line and position is in all's batch
	}
	p.batches = p.batches[:0]
	for _, s := range p.touched {
		if s != p.all {
			p.batches = append(p.batches, s.batch)
		}
	}
	p.batches = append(p.batches, p.all.batch)
	if p.cfg.PersistWindow {
		now := p.now()
		for _, s := range p.touched {
			p.advance(s, now)
			s.batch.SetWindowStart(s.win.Start())
		}
		p.all.batch.SetWindowStart(p.all.win.Start())
	}
	began := time.Now()
	if err := p.committed(p.store.Commit(p.batches...), began); err != nil {
		return err
	}
	for _, s := range p.touched {
		s.batch.Reset()
		s.inBatch = false
	}
	p.touched = p.touched[:0]
	p.all.batch.Reset()
	return nil
}

// committed records the outcome of a commit that began at began: the
// error and the log line of one that failed, the figures of one that
// succeeded. Any goroutine may call it, one at a time.
func (p *Pipeline) committed(err error, began time.Time) error {
	if err != nil {
		if p.lastErr.Load() == nil {
			p.log.Error("commit failed; reading paused until it succeeds", "err", err)
		}
		p.lastErr.Store(&err)
		return err
	}
	if p.lastErr.Swap(nil) != nil {
		p.log.Info("commit succeeded again; reading resumed")
	}
	p.commitSeconds.Observe(time.Since(began).Seconds())
	p.commits.Add(1)
	p.lastOK.Store(p.now().UnixNano()) // on the pipeline's clock, as the status's other times
	return nil
}

// Err returns the error of the last commit if it failed, nil otherwise. A
// non-nil error means reading is paused until a commit succeeds.
func (p *Pipeline) Err() error {
	if e := p.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Commits returns how many commits have succeeded.
func (p *Pipeline) Commits() int64 { return p.commits.Load() }

// publish publishes every site's window, moved to the clock first. A
// window that did not change costs nothing to publish.
func (p *Pipeline) publish() {
	if p.cfg.NoWindow {
		return
	}
	now := p.now()
	for _, s := range p.list {
		p.advance(s, now)
		s.win.Publish()
	}
	// A counter's snapshot carries every key, up to --max-counter-keys:
	// sorting them is worth doing once a second, not ten times.
	if p.publishes%10 == 0 {
		for _, s := range p.counters {
			p.advance(s, now)
			s.win.Publish()
		}
	}
	p.publishes++
}

// Lines returns how many lines have been read.
func (p *Pipeline) Lines() int64 { return p.lines.Load() }

// Parsed returns how many lines parsed and were accepted.
func (p *Pipeline) Parsed() int64 { return p.parsed.Load() }

// Rejected returns how many lines were rejected, for every reason.
func (p *Pipeline) Rejected() int64 {
	var n int64
	for i := range p.rejected {
		n += p.rejected[i].Load()
	}
	return n
}

// RejectedBy returns the rejected-line count for each reason.
func (p *Pipeline) RejectedBy() map[string]int64 {
	m := make(map[string]int64, len(rejectReasons))
	for i, r := range rejectReasons {
		m[r.Error()] = p.rejected[i].Load()
	}
	return m
}
