package ingest

import (
	"sync/atomic"

	"github.com/logtally/logtally/counter"
)

// Counts are what a core counted since it started, for the status, the
// metrics and a replay's summary. Any goroutine may read them; only the
// goroutine that applies lines adds to them, once per chunk or per rare
// line, never per hit but for the named counters'.
type Counts struct {
	lines, parsed, bytes atomic.Int64
	rejected             []atomic.Int64 // by index in rejectReasons
	other                atomic.Int64   // lines counted under OtherSite
	counted              []atomic.Int64 // lines each named counter counted, in declaration order
	same                 []int          // the counter each one counts as (counter.Matcher.Same)
}

// init makes room for every reason, each of m's counters and then
// breakdowns more, each counted as a counter.
func (c *Counts) init(m *counter.Matcher, breakdowns int) {
	c.rejected = make([]atomic.Int64, len(rejectReasons))
	if m != nil {
		for i := range m.Counters() {
			c.same = append(c.same, m.Same(i))
		}
	}
	for range breakdowns {
		c.same = append(c.same, len(c.same))
	}
	c.counted = make([]atomic.Int64, len(c.same))
}

// Lines returns how many lines have been read.
func (c *Counts) Lines() int64 { return c.lines.Load() }

// Parsed returns how many lines parsed and were accepted.
func (c *Counts) Parsed() int64 { return c.parsed.Load() }

// BytesRead returns the bytes of lines read.
func (c *Counts) BytesRead() int64 { return c.bytes.Load() }

// Rejected returns how many lines were rejected, for every reason.
func (c *Counts) Rejected() int64 {
	var n int64
	for i := range c.rejected {
		n += c.rejected[i].Load()
	}
	return n
}

// RejectedBy returns the rejected-line count for each reason.
func (c *Counts) RejectedBy() map[string]int64 {
	m := make(map[string]int64, len(rejectReasons))
	for i, r := range rejectReasons {
		m[r.Error()] = c.rejected[i].Load()
	}
	return m
}

// CounterLines returns how many lines the i-th named counter counted: by
// itself, and in the groups it is in.
func (c *Core) CounterLines(i int) int64 {
	lead := c.same[i]
	return c.counted[lead].Load() + c.router.groupLines(lead)
}
