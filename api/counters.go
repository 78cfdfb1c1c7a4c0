package api

import (
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
)

// Counters is what the API reads of the named counters (see package
// counter). Each counter is counted as a site of its own whose paths are
// the counter's keys: its live window's Requests are the lines it counted,
// Visitors their distinct visitors, and Pages its keys with their counts;
// its history's Series, PathCounts and Pages are the counter's per minute,
// hour and day, per key per day and in all, and its top keys of a range.
type Counters interface {
	// Declared returns the declared counters and ratios, in declaration
	// order.
	Declared() ([]counter.Counter, []counter.Ratio)
	// CounterSnapshot returns a counter's live window, and false for an
	// undeclared name. Its Pages hold every key the window counts (up to
	// --max-counter-keys), most counted first, the key in Path. It must
	// not block.
	CounterSnapshot(name string) (*logtally.Snapshot, bool)
	// CounterHistory returns a counter's stored history, nil before its
	// first lines are committed. It implements PageHistory.
	CounterHistory(name string) History
}
