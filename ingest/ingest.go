// Package ingest runs the pipeline from log chunks to counts: it parses each
// line, classifies it, adds it to the live window and to a storage batch, and
// commits the batch together with the read positions of the lines in it.
//
// One goroutine owns the window and the batch, so the hot path takes no
// locks. Readers see the window only through the snapshots it publishes.
// Parsing, the expensive part, is separate from applying: Replay parses
// chunks on every core and applies the results in order on that goroutine.
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
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// Defaults for Config.
const (
	DefaultFlushInterval   = time.Second
	DefaultFlushLines      = 50_000
	DefaultPublishInterval = 100 * time.Millisecond
)

// Clock anchors for Config.Anchor.
const (
	// AnchorClock ends the window at the current time: the live view.
	AnchorClock = "clock"
	// AnchorLog ends the window at the newest line's timestamp: the view of
	// a log as it was when it was written, for archives and demos.
	AnchorLog = "log"
)

// Config configures a Pipeline.
type Config struct {
	Format     *parser.Format
	Classifier *classify.Classifier
	Window     *window.Window
	Store      Committer
	MaxLine    int // longer lines are rejected; tailer.DefaultMaxLine if zero
	// OnCommit, if set, is told how long each successful commit took.
	OnCommit func(time.Duration)
	// NoSamples turns off keeping the last rejected lines.
	NoSamples bool
	// PersistWindow stores the live window's per-second state with each
	// commit, so that a restart rebuilds the window exactly. Replay, which
	// has no live window to serve, leaves it off.
	PersistWindow   bool
	Now             func() time.Time // the clock; time.Now if nil
	Anchor          string           // AnchorClock (default) or AnchorLog
	FlushInterval   time.Duration
	FlushLines      int
	PublishInterval time.Duration
	Logger          *slog.Logger
}

// RegisterFlags registers the pipeline's flags on fs; the fields that are
// objects (Format, Store, ...) are set by the caller.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Anchor, "window-end", AnchorClock,
		"what the window ends at: clock (now) or log (the newest line's time, for archives)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", DefaultFlushInterval, "longest time between commits")
	fs.IntVar(&c.FlushLines, "flush-lines", DefaultFlushLines, "most lines in one commit")
	fs.BoolVar(&c.NoSamples, "no-samples", false, "do not keep the last rejected lines for /api/v1/status")
}

// Validate reports settings that cannot work.
func (c *Config) Validate() error {
	if c.Anchor != "" && c.Anchor != AnchorClock && c.Anchor != AnchorLog {
		return fmt.Errorf("window end %q: want %s or %s", c.Anchor, AnchorClock, AnchorLog)
	}
	return nil
}

// Committer is where batches go: *storage.Store, or a test's failing double.
type Committer interface {
	Commit(*logtally.Batch) error
}

// Pipeline is the ingest loop. Its counters may be read from any goroutine.
type Pipeline struct {
	cfg   Config
	batch *logtally.Batch
	rec   parser.Record
	res   result // Run's reusable result
	last  int64  // newest line second seen, for AnchorLog
	pool  sync.Pool

	lines    atomic.Int64
	parsed   atomic.Int64
	rejected []atomic.Int64 // by index in rejectReasons
	lastLog  time.Time
	lastErr  atomic.Pointer[error] // the last commit's error; nil once one succeeds
	commits  atomic.Int64
	lastOK   atomic.Int64 // unix nanoseconds of the last successful commit
	bytes    atomic.Int64 // bytes of lines read

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

// New returns a pipeline. Unset intervals take their defaults.
func New(cfg Config) *Pipeline {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Anchor == "" {
		cfg.Anchor = AnchorClock
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.FlushLines <= 0 {
		cfg.FlushLines = DefaultFlushLines
	}
	if cfg.PublishInterval <= 0 {
		cfg.PublishInterval = DefaultPublishInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = tailer.DefaultMaxLine
	}
	return &Pipeline{cfg: cfg, batch: logtally.NewBatch(), rejected: make([]atomic.Int64, len(rejectReasons))}
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
	second := time.NewTimer(untilNextSecond(p.cfg.Now()))
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
			if p.batch.Lines() >= p.cfg.FlushLines && p.commit() != nil {
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
			second.Reset(untilNextSecond(p.cfg.Now()))
		}
	}
}

// untilNextSecond is the time from now to the next whole second.
func untilNextSecond(now time.Time) time.Duration {
	return now.Truncate(time.Second).Add(time.Second).Sub(now)
}

func (p *Pipeline) finish() error {
	err := p.commit()
	p.publish()
	return err
}

// chunk counts the lines of c on the calling goroutine.
func (p *Pipeline) chunk(c tailer.Chunk) {
	p.parse(c, &p.rec, &p.res)
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
		p.cfg.Logger.Warn("rejected line", "reason", err, "line", string(line),
			"rejected_total", p.Rejected())
	}
}

// sample keeps a copy of a rejected line, cut to MaxSampleSize bytes.
func (p *Pipeline) sample(line []byte, err error) {
	if len(line) > MaxSampleSize {
		line = line[:MaxSampleSize]
	}
	s := Sample{Time: p.cfg.Now(), Reason: err.Error(), Line: strings.ToValidUTF8(string(line), "\uFFFD")}
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
	if p.batch.Empty() {
		return nil
	}
	if p.cfg.PersistWindow {
		p.batch.SetWindowStart(p.cfg.Window.Start())
	}
	began := time.Now()
	if err := p.cfg.Store.Commit(p.batch); err != nil {
		if p.lastErr.Load() == nil {
			p.cfg.Logger.Error("commit failed; reading paused until it succeeds", "err", err)
		}
		p.lastErr.Store(&err)
		return err
	}
	if p.lastErr.Swap(nil) != nil {
		p.cfg.Logger.Info("commit succeeded again; reading resumed")
	}
	if p.cfg.OnCommit != nil {
		p.cfg.OnCommit(time.Since(began))
	}
	p.commits.Add(1)
	p.lastOK.Store(time.Now().UnixNano())
	p.batch.Reset()
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

func (p *Pipeline) publish() {
	if p.cfg.Anchor == AnchorClock {
		p.cfg.Window.Advance(p.cfg.Now())
	}
	p.cfg.Window.Publish()
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
