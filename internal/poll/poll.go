// Package poll waits, in tests, for a condition that another goroutine
// makes true: a daemon's loop reading lines, a handler's goroutine letting
// a stream go, a node shipping its outbox.
//
// The one idea: a test waits for an outcome, never for a fixed time. Until
// looks again soon after each miss (the wait between looks grows from a
// millisecond to a few), so a passing test waits only as long as the work
// takes, and its deadline is generous because only a failing test reaches
// it: the machine running the suite may be small and busy. Where the code
// under test offers an event (a channel closed on publish, a test waker),
// wait on that instead.
package poll

import (
	"testing"
	"time"
)

// Patience is how long Until waits before it fails the test: far longer
// than any passing wait, so that a loaded machine does not fail the suite
// by chance.
const Patience = 90 * time.Second

// maxGap bounds the wait between two looks: short enough that a passing
// test is not slowed, long enough not to steal a busy machine's cores.
const maxGap = 10 * time.Millisecond

// Until calls cond until it returns true, and fails tb, saying it was
// waiting for what, if Patience passes first. cond runs on the test's
// goroutine, so it may call tb's methods.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	until(tb, Patience, what, cond)
}

func until(tb testing.TB, patience time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(patience)
	gap := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", patience, what)
		}
		time.Sleep(gap)
		gap = min(2*gap, maxGap)
	}
}
