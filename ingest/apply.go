package ingest

import "github.com/logtally/logtally"

// Apply adds a routed result to the batches, as replay does: every hit
// goes to the all-sites view's batch, to those of the counters it counts
// (CountMatch) and to its site's (AddToSite); then the chunk's lines,
// rejected lines and position count (ApplyLines). The live loop does the
// same hit by hit, between its windows.
func (c *Core) Apply(r *Result) {
	all := c.router.all
	mi := 0 // r.matches[mi:] are of hit i and after
	r.NumberPaths(all.Batch)
	for i := range r.Hits {
		h := &r.Hits[i]
		r.AddTo(all.Batch, i, false)
		first := mi
		mi = r.MatchesEnd(i, mi)
		for _, m := range r.matches[first:mi] {
			ch := r.CounterHit(h, m)
			c.CountMatch(m, &ch, false)
		}
		if s := r.Site(i); s != nil {
			r.addToSite(s, i, false)
			c.siteAdded(s)
		}
	}
	c.applyTallies(r)
	c.ApplyLines(r, int64(len(r.Hits)))
}

// AllSites returns the site every hit goes to besides its own: the
// all-sites view, or with one site, DefaultSite. A loop adds each hit to
// its batch itself, so that the commonest step of the hot path costs no
// call of its own.
func (c *Core) AllSites() *Site { return c.router.all }

// AddToSite adds hit h to the batch of its site s. With second, it is
// inside the live window: the commit checkpoints its second too, so that
// a restart rebuilds the window exactly.
func (c *Core) AddToSite(s *Site, h *logtally.Hit, second bool) {
	s.Batch.Add(h, second)
	c.siteAdded(s)
}

// siteAdded notes that a hit was added to the batch of its site s.
func (c *Core) siteAdded(s *Site) {
	c.router.touch(s)
	if s.other {
		c.other.Add(1)
	}
}

// countHit adds ch, what a hit counts in named counter k (Result.CounterHit:
// a page view of the counter's key), to the counter's batch.
func (c *Core) countHit(k int, ch *logtally.Hit, second bool) {
	s := c.router.counters[k]
	s.Batch.Add(ch, second)
	c.router.touch(s)
	c.counted[k].Add(1)
}

// RejectHit counts a hit the live window turned away, too far ahead of its
// end, as a rejected line (ErrTooNew) of the all-sites view and of its
// site s (nil for none).
func (c *Core) RejectHit(s *Site) {
	c.rejected[tooNewIdx].Add(1)
	c.router.all.Batch.Reject(c.now().Unix())
	if s != nil {
		s.Batch.Reject(c.now().Unix())
		c.router.touch(s)
	}
}

// ApplyLines counts what a chunk adds besides its hits, once they were
// added, parsed of them counted (not turned away): its lines, the rejected
// ones (in all's batch, and in its file's site's), their samples, and its
// file's position.
func (c *Core) ApplyLines(r *Result, parsed int64) {
	all := c.router.all
	all.Batch.AddLines(r.lines)
	c.lines.Add(r.lines)
	c.parsed.Add(parsed)
	c.bytes.Add(r.size)
	now := c.now().Unix()
	fileSite := r.FileSite()
	for i, n := range r.rejected {
		if n == 0 {
			continue
		}
		c.rejected[i].Add(n)
		for range n {
			all.Batch.Reject(now)
		}
		if fileSite != nil {
			for range n {
				fileSite.Batch.Reject(now)
			}
			c.router.touch(fileSite)
		}
	}
	for _, s := range r.samples {
		c.keep(s.line, s.err)
	}
	if n := len(r.samples); n > 0 && c.due() {
		c.logRejected(r.samples[n-1].line, r.samples[n-1].err, c.Rejected())
	}
	if r.file != "" {
		all.Batch.SetPosition(r.file, r.offset)
	}
}
