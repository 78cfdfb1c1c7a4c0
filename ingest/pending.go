package ingest

// The batches a commit takes: the sites' that hold lines since the last
// one. Whoever commits (the live loop, replay) asks for them, commits
// them, and then clears them.

// Pending returns the sites whose batches hold lines for the next commit,
// the all-sites view last: its batch holds every line's count and every
// position. Nil when the batches hold nothing to commit. The slice is
// reused by the next call.
func (c *Core) Pending() []*Site {
	rt := &c.router
	if rt.all.Batch.Empty() {
		return nil
	}
	rt.settleGroups()
	rt.pending = append(append(rt.pending[:0], rt.touched...), rt.all)
	return rt.pending
}

// PendingLines returns how many lines the batches hold, and how many
// sites' batches hold them (the all-sites view aside).
func (c *Core) PendingLines() (lines, sites int) {
	return c.router.all.Batch.Lines(), len(c.router.touched)
}

// ClearPending forgets which sites' batches hold lines, once they were
// committed: the caller has emptied them, or put empty ones in their place.
func (c *Core) ClearPending() {
	for _, s := range c.router.touched {
		s.inBatch = false
	}
	c.router.touched = c.router.touched[:0]
	c.router.groups.settled = false
}
