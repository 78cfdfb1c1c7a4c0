package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
)

// Outbox is where a node's committed batches wait to be shipped, numbered
// in commit order: *storage.Outbox.
type Outbox interface {
	// Next returns the entry with the smallest number above after.
	Next(after uint64) (logtally.OutboxEntry, bool, error)
	// Delete deletes the entries numbered up to through, and keeps through
	// and its checksum as the last acknowledged.
	Delete(through uint64, sum logtally.EntrySum) (int, error)
	// Acked returns the last entry acknowledged and its checksum.
	Acked() (uint64, logtally.EntrySum, bool, error)
	// Rebase drops every entry, numbers the next seq+1, keeps seq and sum
	// as the last acknowledged and moves the read positions of the files
	// given.
	Rebase(seq uint64, sum logtally.EntrySum, positions map[string]int64) (int, error)
	// NodeID returns the database's identity in the fleet, made on first
	// use; SetNodeID replaces it.
	NodeID() ([16]byte, error)
	SetNodeID([16]byte) error
	Stats() (logtally.OutboxStats, error)
	// Written receives a value after a commit adds an entry.
	Written() <-chan struct{}
}

// Node states, as NodeStats reports them.
const (
	StateConnecting = "connecting" // the fleet database has not been reached since start
	StateShipping   = "shipping"   // the last shipment (or check) succeeded
	StateRetrying   = "retrying"   // the last shipment failed; it is tried again
	StateBlocked    = "blocked"    // the last attempt failed on what only a fix can mend (blockedBy); tried again every minute
	StateStopped    = "stopped"    // shipping stopped on an error retrying cannot mend
)

var (
	// ErrOtherSecret means the fleet database was first used with another
	// --visitor-secret-file than this node's: its visitors are hashed with
	// other keys and would count twice, so shipping stops.
	ErrOtherSecret = errors.New("fleet database was first used with another --visitor-secret-file than this node's " +
		"(every node must be given a copy of the same secret file)")
	// ErrNotConnected means the fleet database has not been reached since
	// the node started.
	ErrNotConnected = errors.New("fleet database not reached yet")
)

// Timing of a Node.
const (
	minBackoff     = 100 * time.Millisecond
	maxBackoff     = 2 * time.Second
	connectTimeout = 10 * time.Second // one attempt to open the fleet database
	applyTimeout   = 30 * time.Second // one batch
	fenceTimeout   = 3 * time.Second  // see Store.Fence
	queryTimeout   = 5 * time.Second  // a history query of the API
	pruneInterval  = time.Minute
	// deleteEvery is how many acknowledged entries may wait before they
	// are deleted from the outbox together: one local write for many
	// shipments while catching up. A crash before the delete only re-sends
	// them, and the cursor drops them.
	deleteEvery = 64
)

// Node is this node's part in a fleet: it checks that it was given the
// fleet's visitor secret, ships the outbox to the fleet database in order,
// keeps the fleet's View fresh with a Refresher, and prunes. It connects
// and ships in its own goroutine, retrying while the database is
// unreachable, so nothing waits on PostgreSQL: a node derives its visitor
// keys from its secret, not from the database.
type Node struct {
	cfg    Config
	outbox Outbox
	log    *slog.Logger
	now    func() time.Time

	ident     Ident // the database's identity (see Check) and the node's name
	store     atomic.Pointer[Store]
	refresher atomic.Pointer[Refresher]
	reached   chan struct{} // closed when refresher is set: see Published
	views     siteViews     // single sites' Refreshers: see SiteView
	status    shipStatus

	// blocked is the last blocking error logged (blockKey), "" since a
	// success: connecting and shipping, one after the other, use it.
	blocked      string
	blockedRetry time.Duration // how long a blocked node waits: blockedRetry, or a test's

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewNode returns the node cfg describes, shipping from outbox. now is its
// clock (time.Now if nil). Start starts it; Close stops it.
func NewNode(cfg Config, outbox Outbox, logger *slog.Logger, now func() time.Time) *Node {
	if now == nil {
		now = time.Now
	}
	n := &Node{cfg: cfg.withDefaults(), outbox: outbox, log: logger, now: now, reached: make(chan struct{}),
		blockedRetry: blockedRetry}
	n.status.state = StateConnecting
	return n
}

// Start connects, if Check has not, and ships until Close. It returns at
// once.
func (n *Node) Start(ctx context.Context) {
	ctx, n.cancel = context.WithCancel(ctx)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.run(ctx)
	}()
}

func (n *Node) run(ctx context.Context) {
	if err := n.loadIdent(); err != nil {
		n.stop(err)
		return
	}
	st := n.store.Load()
	if st == nil {
		var err error
		if st, err = n.connect(ctx); err != nil {
			return // ctx is done
		}
		n.store.Store(st)
	}
	if err := n.checkSecret(st); err != nil {
		n.stop(err)
		return
	}
	if err := st.MeasureClock(ctx); err != nil { // else the Refresher's will do, a second later
		n.log.Debug("fleet: measure the clock", "err", err)
	}
	n.refresher.Store(NewRefresher(st, n.site(), n.log))
	close(n.reached)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		st.RunPruner(ctx, pruneInterval, n.log)
	}()
	n.ship(ctx, st)
}

// checkSecret makes sure this node hashes its visitors with keys of the
// fleet's secret.
func (n *Node) checkSecret(st *Store) error {
	if !st.SameSecret() {
		return fmt.Errorf("fleet: %w", ErrOtherSecret)
	}
	return nil
}

// connect opens the fleet database, retrying (see retry) until it
// succeeds or ctx is done.
func (n *Node) connect(ctx context.Context) (*Store, error) {
	backoff := minBackoff
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, connectTimeout)
		st, err := Open(actx, n.cfg, n.log)
		cancel()
		if err == nil {
			st.Now = n.now
			n.blocked = ""
			n.log.Info("fleet: connected", "node", n.cfg.Node, "attempts", attempt+1)
			return st, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt == 0 && blockedBy(err, n.cfg.URL) == nil {
			n.log.Warn("fleet: cannot reach the fleet database; counting locally and trying again", "err", err)
		}
		if !n.retry(ctx, StateConnecting, err, &backoff) {
			return nil, ctx.Err()
		}
	}
}

// sleep waits for *backoff or until ctx is done, and doubles *backoff up
// to maxBackoff. It reports whether ctx is still live.
func sleep(ctx context.Context, backoff *time.Duration) bool {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	*backoff = min(2**backoff, maxBackoff)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// failed records an error that is retried.
func (n *Node) failed(state string, err error) {
	n.status.failed(state, err, n.now())
}

// succeeded records a shipment or check that worked.
func (n *Node) succeeded() {
	n.blocked = ""
	n.status.succeeded()
}

// stop records an error that ends shipping, and logs it.
func (n *Node) stop(err error) {
	n.log.Error("fleet: shipping stopped; the outbox keeps every batch", "err", err)
	n.status.set(StateStopped, err, n.now())
}

// Close stops shipping, refreshing and pruning, waits for them, and closes
// the connections. The outbox keeps what was not shipped.
func (n *Node) Close() {
	if n.cancel != nil {
		n.cancel()
	}
	n.wg.Wait()
	if r := n.refresher.Load(); r != nil {
		r.Close()
	}
	n.closeSiteViews()
	if st := n.store.Load(); st != nil {
		st.Close()
	}
}

// Current returns the fleet's last View, or nil before the first read. It
// never blocks.
func (n *Node) Current() *logtally.View {
	if r := n.refresher.Load(); r != nil {
		return r.Current()
	}
	return nil
}

// Published returns a channel closed when the fleet's next View is
// published (see Refresher.Updated), for the API's event stream. Before
// the fleet database is reached it is closed when it is, so that a waiter
// then takes the Refresher's: the first View is told like any other, and
// nobody has to look again on a timer.
func (n *Node) Published() <-chan struct{} {
	if r := n.refresher.Load(); r != nil {
		return r.Updated()
	}
	return n.reached
}

// Series answers the fleet's history, within a time limit: the API's
// History.
func (n *Node) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	return n.SiteHistory(n.site()).Series(from, to, step)
}

// PathCounts answers the fleet's page views per path today and in all,
// within a time limit: the API's History.
func (n *Node) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	return n.SiteHistory(n.site()).PathCounts(paths, day)
}

// NodeStats is what a Node reports of itself: how far it has shipped, what
// waits, and what went wrong last.
type NodeStats struct {
	Node        string
	State       string // StateConnecting, StateShipping, StateRetrying, StateBlocked or StateStopped
	Outbox      logtally.OutboxStats
	Acked       uint64 // the last batch the fleet acknowledged since start; 0 if none
	Applied     int64  // batches applied since start
	Duplicates  int64  // batches the fleet had already: re-sent after a lost reply or a crash
	Failures    int64  // attempts that failed and were retried
	LastError   error  // the last failure, even if shipping has recovered since
	LastErrorAt time.Time
	AsOf        time.Time // when the current View was read, by the fleet database's clock; zero before the first
	// RefreshError is the last refresh's error if it failed: the View is
	// older than Config.Refresh.
	RefreshError error
	Clock        ClockStats // this node's clock against the fleet database's; zero before it is reached
}

// Stats returns the node's figures. It reads the outbox's, which costs a
// read transaction of the local store.
func (n *Node) Stats() NodeStats {
	st := NodeStats{Node: n.cfg.Node}
	n.status.fill(&st)
	var err error
	if st.Outbox, err = n.outbox.Stats(); err != nil && st.LastError == nil {
		st.LastError = err
	}
	if store := n.store.Load(); store != nil {
		st.Clock = store.ClockStats()
	}
	if r := n.refresher.Load(); r != nil {
		if v := r.Current(); v != nil {
			st.AsOf = v.AsOf
		}
		_, st.RefreshError = r.LastError()
	}
	return st
}

// site is the site the node's answers from the fleet are for.
func (n *Node) site() string {
	if n.cfg.Site == "" {
		return logtally.DefaultSite
	}
	return n.cfg.Site
}
