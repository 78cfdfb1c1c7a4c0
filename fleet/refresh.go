package fleet

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
)

// SeriesSpan is how much recent history a View holds: the API's default
// series, the last hour by minute.
const SeriesSpan = time.Hour

// View is the fleet's live window and recent history as one refresh read
// them (the SeriesSpan up to AsOf, by minute). It is the domain's type, so
// that the API can serve it without knowing this package.
type View = logtally.View

// Refresher reads a site's View from the fleet database at most once per
// Config.Refresh, in its own goroutine, and publishes it, so that readers
// get the last one with an atomic load and never wait on PostgreSQL.
type Refresher struct {
	store *Store
	site  string
	log   *slog.Logger

	current atomic.Pointer[View]
	mu      sync.Mutex
	updated chan struct{} // closed at the next publish
	lastErr error
	errAt   time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

// NewRefresher starts refreshing site's View from store; Close stops it.
func NewRefresher(store *Store, site string, logger *slog.Logger) *Refresher {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Refresher{store: store, site: site, log: logger, updated: make(chan struct{}), cancel: cancel,
		done: make(chan struct{})}
	go r.run(ctx)
	return r
}

// refreshTimeout bounds one refresh, so that a database that stops
// answering leaves the last View in place and the next refresh tries again.
func (r *Refresher) refreshTimeout() time.Duration { return max(10*time.Second, r.store.cfg.Refresh) }

func (r *Refresher) run(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.store.cfg.Refresh)
	defer t.Stop()
	failing := false
	for {
		rctx, cancel := context.WithTimeout(ctx, r.refreshTimeout())
		err := r.Refresh(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			// Logged once when refreshing starts to fail and once when it
			// recovers, not every second in between.
			r.log.Warn("fleet: refresh failed; serving the last counts", "err", err)
			failing = true
		case err == nil && failing:
			r.log.Info("fleet: refresh recovered")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads the View now and publishes it: the live window that ends
// at the database's clock, and the series up to it, so that every node's
// View of one moment is the same whatever its own clock says. It measures
// the node's clock against the database's on the way. The loop calls it; a
// test may too.
func (r *Refresher) Refresh(ctx context.Context) error {
	st := r.store
	before := st.Now()
	v := &View{}
	var err error
	v.Window, v.AsOf, err = st.LiveWindow(ctx, r.site, st.cfg.Window)
	if err == nil {
		st.observeClock(ctx, before, st.Now(), v.AsOf)
		v.Series, err = st.Series(ctx, r.site, v.AsOf.Add(-SeriesSpan), v.AsOf, time.Minute)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.lastErr, r.errAt = err, before
		return err
	}
	r.lastErr = nil
	r.current.Store(v)
	close(r.updated)
	r.updated = make(chan struct{})
	return nil
}

// Current returns the last View published, or nil before the first. It
// never blocks.
func (r *Refresher) Current() *View { return r.current.Load() }

// Updated returns a channel that is closed when the next View is
// published.
func (r *Refresher) Updated() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updated
}

// LastError returns the last refresh's error and when it happened, or a
// nil error if the last refresh succeeded: what /api/v1/status shows.
func (r *Refresher) LastError() (at time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errAt, r.lastErr
}

// Close stops refreshing and waits for the goroutine to end. The last View
// stays readable.
func (r *Refresher) Close() {
	r.cancel()
	<-r.done
}
