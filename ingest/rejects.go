package ingest

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Sample is a rejected line kept for operators to look at, redacted:
// addresses masked to their network, users and query strings dropped.
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

// rejects keeps the last rejected lines, for the status and for the
// verdict on a log's format (see Judge), and logs one at most once a
// second.
type rejects struct {
	off     bool // Config.NoSamples
	whole   bool // Config.ShowRejected: samples kept as read, not redacted
	now     func() time.Time
	log     *slog.Logger
	lastLog time.Time // only the goroutine that applies lines uses it

	mu      sync.Mutex
	samples []Sample // the last MaxSamples rejected lines, oldest first
}

// keep keeps a copy of a rejected line, redacted (see redact) unless
// whole, and cut to MaxSampleSize bytes.
func (rj *rejects) keep(line []byte, err error) {
	if rj.off {
		return
	}
	s := Sample{Time: rj.now(), Reason: err.Error()}
	if rj.whole {
		s.Line = cut(strings.ToValidUTF8(string(line[:min(len(line), 2*MaxSampleSize)]), "\uFFFD"), MaxSampleSize)
	} else {
		s.Line = redact(line, MaxSampleSize)
	}
	rj.mu.Lock()
	if len(rj.samples) == MaxSamples {
		copy(rj.samples, rj.samples[1:])
		rj.samples = rj.samples[:MaxSamples-1]
	}
	rj.samples = append(rj.samples, s)
	rj.mu.Unlock()
}

// due reports whether a rejected line may be logged: at most once a
// second.
func (rj *rejects) due() bool {
	now := time.Now()
	if now.Sub(rj.lastLog) < time.Second {
		return false
	}
	rj.lastLog = now
	return true
}

// logRejected logs a bad line, redacted (see redact) even when the
// samples are kept whole: a log is read by more people, and kept longer,
// than the status is. It logs how many were rejected in all too.
func (rj *rejects) logRejected(line []byte, err error, total int64) {
	const max = 256
	rj.log.Warn("rejected line", "reason", err, "line", redact(line, max), "rejected_total", total)
}

// Samples returns the last rejected lines, oldest first.
func (rj *rejects) Samples() []Sample {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	return slices.Clone(rj.samples)
}
