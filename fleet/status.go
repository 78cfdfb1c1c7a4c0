package fleet

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// shipStatus is what a Node's shipping records of itself for Stats: where
// it stands, what went wrong last, and how many batches went which way.
// Shipping writes it and Stats reads it, on different goroutines.
type shipStatus struct {
	mu      sync.Mutex
	state   string // StateConnecting, StateShipping, StateRetrying, StateBlocked or StateStopped
	lastErr error
	errAt   time.Time

	acked      atomic.Uint64 // the last batch the fleet acknowledged
	applied    atomic.Int64
	duplicates atomic.Int64
	failures   atomic.Int64
}

// failed records an error, at at, that is retried in state (a blocked
// one, StateBlocked, too).
func (s *shipStatus) failed(state string, err error, at time.Time) {
	s.failures.Add(1)
	s.set(state, err, at)
}

// set records the state, and an error that is why.
func (s *shipStatus) set(state string, err error, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.lastErr, s.errAt = state, err, at
}

// succeeded records a shipment or check that worked; the last error stays
// for Stats.
func (s *shipStatus) succeeded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = StateShipping
}

// fill sets st's state, error and counts.
func (s *shipStatus) fill(st *NodeStats) {
	st.Acked, st.Applied = s.acked.Load(), s.applied.Load()
	st.Duplicates, st.Failures = s.duplicates.Load(), s.failures.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	st.State, st.LastError, st.LastErrorAt = s.state, s.lastErr, s.errAt
}

// published are the errors whose text Why may tell the API's clients:
// what they say is about the fleet, with nothing of the database's
// address, user or data.
var published = []error{ErrOtherSecret, ErrNameTaken, ErrBehind, ErrFleetBehind, ErrGap, ErrSchema}

// Why says, in a sentence safe to publish, why the fleet's counts may be
// missing: the database not reached yet, or shipping stopped and on what.
// It is empty when shipping works.
func (n *Node) Why() string {
	st := n.Stats()
	switch st.State {
	case StateConnecting:
		return "the fleet database has not been reached since start"
	case StateRetrying:
		return "the fleet database does not answer"
	case StateStopped:
		for _, e := range published {
			if errors.Is(st.LastError, e) {
				return "shipping stopped: " + e.Error()
			}
		}
		return "shipping stopped"
	}
	return ""
}
