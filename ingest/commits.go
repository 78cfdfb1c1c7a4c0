package ingest

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// commitRecord is how the commits went, for the status, the metrics and
// the readiness check: whichever goroutine commits tells it (Committed),
// any goroutine reads it.
type commitRecord struct {
	lastErr atomic.Pointer[error] // the last commit's error; nil once one succeeds
	commits atomic.Int64
	lastOK  atomic.Int64 // unix nanoseconds of the last successful commit
	seconds prometheus.Histogram
	now     func() time.Time
	log     *slog.Logger
}

func newCommitHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "logtally_commit_duration_seconds",
		Help: "Time to commit a batch to the database.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
}

// Committed records the outcome of a commit that began at began, and
// returns its error: the error and the log line of one that failed, the
// figures of one that succeeded. Any goroutine may call it, one at a time.
func (cr *commitRecord) Committed(err error, began time.Time) error {
	if err != nil {
		if cr.lastErr.Load() == nil {
			cr.log.Error("commit failed; reading paused until it succeeds", "err", err)
		}
		cr.lastErr.Store(&err)
		return err
	}
	if cr.lastErr.Swap(nil) != nil {
		cr.log.Info("commit succeeded again; reading resumed")
	}
	cr.seconds.Observe(time.Since(began).Seconds())
	cr.commits.Add(1)
	cr.lastOK.Store(cr.now().UnixNano()) // on the core's clock, as the status's other times
	return nil
}

// Err returns the error of the last commit if it failed, nil otherwise. A
// non-nil error means reading is paused until a commit succeeds.
func (cr *commitRecord) Err() error {
	if e := cr.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Commits returns how many commits have succeeded.
func (cr *commitRecord) Commits() int64 { return cr.commits.Load() }

// LastCommit returns when a commit last succeeded; zero if none has.
func (cr *commitRecord) LastCommit() time.Time {
	if n := cr.lastOK.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}
