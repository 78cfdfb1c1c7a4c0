package fleet

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally/tally"
)

// The fleet's clock is the database's. Nodes' clocks differ, and a line's
// time is its node's clock (nginx's, on the same machine): a live window,
// a pruning or a limit on lines from the future that followed each node's
// own clock would differ from node to node, and one node whose clock runs
// ahead would spoil the others' windows. So the live window's rows are
// pruned, and every node's live window ends, by the database's clock
// (now() in the statements); and each node measures its clock against it,
// reports the offset, and leaves out of the live window the seconds it
// ships that are dated beyond the database's clock plus its --max-skew.

// Timing of the clock's reports.
const (
	// clockStoreEvery is how often a node writes its clock's offset to
	// logtally.nodes while it holds still; a change of clockStoreChange
	// or more is written at once.
	clockStoreEvery  = time.Minute
	clockStoreChange = time.Second
	// futureLogEvery is how often at most a node logs that it left lines
	// dated in the future out of the live window.
	futureLogEvery = 10 * time.Minute
)

// clock is what a Store knows of its node's clock against the database's.
type clock struct {
	mu           sync.Mutex
	offset       time.Duration // the node's clock minus the database's
	measured     time.Time     // when, by the node's clock; zero: never
	stored       time.Time     // when offset was last written to logtally.nodes, by the node's clock
	storedOffset time.Duration
	warned       bool // the offset is beyond the max skew, and that was logged
	futureLogged time.Time

	future atomic.Int64 // lines left out of the live window: see ClockStats.Future
}

// ClockStats is what a node knows of its clock against the fleet
// database's.
type ClockStats struct {
	Offset   time.Duration // this node's clock minus the database's, as last measured
	Measured time.Time     // when, by this node's clock; zero before the first measure
	MaxSkew  time.Duration // this node's --max-skew: an offset beyond it is warned about
	// Future counts the lines, since start, left out of the fleet's live
	// window for being dated beyond the database's clock plus MaxSkew.
	Future int64
}

// ClockStats returns what the store knows of its node's clock.
func (s *Store) ClockStats() ClockStats {
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	return ClockStats{Offset: c.offset, Measured: c.measured, MaxSkew: s.cfg.MaxSkew, Future: c.future.Load()}
}

// dbNow is the database's clock in a statement: PostgreSQL's now() (the
// transaction's start, one time for all the statements of a transaction),
// unless the session setting logtally.now pins it. Tests pin it, with
// options=-c logtally.now=TIME in the URL, to fix the fleet's clock as they
// fix a node's.
const dbNow = `coalesce(nullif(current_setting('logtally.now', true), '')::timestamptz, now())`

// MeasureClock reads the database's clock and records this node's offset
// from it, which decides which of the node's seconds are live (see
// liveUntil). A Refresher measures it at every refresh; a node measures it
// once before it ships.
func (s *Store) MeasureClock(ctx context.Context) error {
	before := s.Now()
	var db time.Time
	if err := s.pool.QueryRow(ctx, "SELECT "+dbNow).Scan(&db); err != nil {
		return fmt.Errorf("fleet: read the database's clock: %w", err)
	}
	s.observeClock(ctx, before, s.Now(), db)
	return nil
}

// observeClock records this node's offset from the database's clock, read
// as db between before and after by this node's: it is reported, written
// to logtally.nodes now and then, and warned about beyond the max skew.
func (s *Store) observeClock(ctx context.Context, before, after, db time.Time) {
	c := &s.clock
	offset := before.Add(after.Sub(before) / 2).Sub(db)
	c.mu.Lock()
	c.offset, c.measured = offset, after
	due := c.stored.IsZero() || after.Sub(c.stored) >= clockStoreEvery || after.Before(c.stored) ||
		(offset-c.storedOffset).Abs() >= clockStoreChange
	off := offset.Abs() > s.cfg.MaxSkew
	changed := off != c.warned
	c.warned = off
	c.mu.Unlock()

	switch {
	case changed && off:
		s.log.Warn("fleet: this node's clock is off from the fleet database's by more than --max-skew; "+
			"its lines dated beyond the database's clock plus --max-skew are left out of the fleet's live window: "+
			"sync this machine's clock: timedatectl / chrony",
			"node", s.cfg.Node, "offset", offset.Round(time.Millisecond), "max_skew", s.cfg.MaxSkew)
	case changed:
		s.log.Info("fleet: this node's clock agrees with the fleet database's again", "node", s.cfg.Node,
			"offset", offset.Round(time.Millisecond))
	}
	if due {
		s.storeClock(ctx, offset, after)
	}
}

// storeClock writes the node's offset to its row of logtally.nodes. A node
// not registered there yet has no row: it is written once it has.
func (s *Store) storeClock(ctx context.Context, offset time.Duration, at time.Time) {
	tag, err := s.pool.Exec(ctx, "UPDATE logtally.nodes SET clock_offset_ms = $2 WHERE name = $1",
		s.cfg.Node, offset.Milliseconds())
	if err != nil {
		s.log.Debug("fleet: store the clock's offset", "err", err)
		return
	}
	if tag.RowsAffected() == 0 {
		return
	}
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stored, c.storedOffset = at, offset
}

// liveUntil returns the last second the fleet takes into its live window
// from this node's batches prepared at now, by this node's clock: the
// database's clock, as last measured, plus the max skew. A node whose
// clock was never measured is taken at its word.
func (s *Store) liveUntil(now time.Time) int64 {
	s.clock.mu.Lock()
	offset := s.clock.offset
	s.clock.mu.Unlock()
	return now.Add(-offset).Add(s.cfg.MaxSkew).Unix()
}

// liveSeconds yields the seconds of seq (in time order) up to until, and
// adds to *future the requests of those after it: lines a node dated in
// the future, which stay out of the live window.
func liveSeconds(seq iter.Seq2[int64, *tally.Delta], until int64, future *int64) iter.Seq2[int64, *tally.Delta] {
	return func(yield func(int64, *tally.Delta) bool) {
		for sec, d := range seq {
			if sec > until {
				*future += d.Requests
				continue
			}
			if !yield(sec, d) {
				return
			}
		}
	}
}

// countFuture counts n lines of an applied batch left out of the live
// window for being dated in the future, and says so in the log now and
// then.
func (s *Store) countFuture(n int64) {
	if n == 0 {
		return
	}
	total := s.clock.future.Add(n)
	now := s.Now()
	c := &s.clock
	c.mu.Lock()
	log := c.futureLogged.IsZero() || now.Sub(c.futureLogged) >= futureLogEvery || now.Before(c.futureLogged)
	if log {
		c.futureLogged = now
	}
	offset := c.offset
	c.mu.Unlock()
	if log {
		s.log.Warn("fleet: lines dated beyond the fleet database's clock plus --max-skew are left out of the fleet's live window; "+
			"they count in its history: sync this machine's clock (and its web server's): timedatectl / chrony",
			"node", s.cfg.Node, "lines", n, "since_start", total, "offset", offset.Round(time.Millisecond), "max_skew", s.cfg.MaxSkew)
	}
}
