package tally

// Merge adds o's lines to b, minute by minute and second by second: what
// b would hold had o's lines been added to it too. Named counters that
// count a line under the same key are counted once, in a batch of their
// group (see ingest); a counter whose lines lie in more than one such
// batch has them merged into one for its commit. o is left as it was.
func (b *Batch) Merge(o *Batch) {
	o = o.origin()
	ids := make([]int32, len(o.names)) // o's path number to b's
	for i, p := range o.names {
		ids[i] = b.pathID(p)
	}
	merge := func(dst map[int64]*Delta, src map[int64]*Delta) {
		for k, d := range src {
			c := dst[k]
			if c == nil {
				c = b.newCounts()
				dst[k] = c
			}
			c.add(d, ids)
		}
	}
	merge(b.minutes, o.minutes)
	merge(b.seconds, o.seconds)
	b.last = max(b.last, o.last)
	b.lastMinuteC, b.lastSecondC = nil, nil
}

// pathID is PathNumber of a path held as a string.
func (b *Batch) pathID(p string) int32 {
	if id, ok := b.ids[p]; ok {
		return id
	}
	return b.newPath(p)
}

// add adds d to c, d's path numbers translated by ids.
func (c *Delta) add(d *Delta, ids []int32) {
	c.Requests += d.Requests
	c.PageViews += d.PageViews
	c.Bytes += d.Bytes
	c.Rejected += d.Rejected
	for i, n := range d.Status {
		c.Status[i] += n
	}
	c.Visitors = append(c.Visitors, d.Visitors...)
	for _, v := range d.Views {
		if v >= 0 {
			v = ids[v]
		}
		c.Views = append(c.Views, v)
	}
}

// SetSite names the site the batch's lines are committed under: a batch
// of a group of named counters is committed under the name of one whose
// lines are all in it, which may change from commit to commit.
func (b *Batch) SetSite(site string) { b.site = site }
