package window

// visitorCount counts the window's distinct visitors. exact is the set,
// visitor -> second of its latest page view, while it is kept; sketch is
// the estimate once the set grew past max. Both may be set: the set is then
// being rebuilt, and is exact for seconds from exactSince on.
type visitorCount struct {
	exact      map[uint64]int64
	sketch     *sketch
	exactSince int64
	max        int

	// Bookkeeping of the slots' visitor lists, which compact keeps in
	// proportion to the visitors the window really holds (see Compaction).
	entries  int // visitors in all slots' lists
	stale    int // of those, visitors listed again in a later second
	after    int // entries after the last compaction
	minStale int // least stale visitors worth a compaction
}

// addVisitor counts a page view by visitor v in slot s.
func (w *Window) addVisitor(s *slot, v uint64) {
	c := &w.visitors
	if c.exact != nil {
		if last, ok := c.exact[v]; !ok || s.sec > last {
			c.exact[v] = s.sec
			s.visitors = append(s.visitors, v)
			c.entries++
			switch {
			case !ok && len(c.exact) > c.max:
				c.drop(w.slots)
			case ok: // its entry in second last is stale now
				c.stale++
				if c.stale > c.minStale && c.entries > 2*c.after {
					c.compact(w.slots)
				}
			}
		}
	}
	if c.sketch != nil {
		c.sketch.add(v, s.sec)
	}
}

// drop gives up the exact visitor set, which outgrew its cap, for the
// sketch, and empties the slots' lists of it.
func (c *visitorCount) drop(slots []slot) {
	if c.sketch == nil {
		c.sketch = new(sketch)
		for v, sec := range c.exact {
			c.sketch.add(v, sec)
		}
	}
	c.exact = nil
	for i := range slots {
		slots[i].visitors = nil
	}
	c.entries, c.stale, c.after = 0, 0, 0
}

// evict takes back the visitors of s, a second that leaves the window: a
// visitor whose latest page view was in it leaves the set.
func (c *visitorCount) evict(s *slot) {
	for _, v := range s.visitors {
		if c.exact[v] == s.sec {
			delete(c.exact, v)
		} else {
			c.stale--
		}
	}
	c.entries -= len(s.visitors)
}

// rebuilt drops the sketch once the exact set being rebuilt covers the
// window, which starts at second start.
func (c *visitorCount) rebuilt(start int64) {
	if c.exact != nil && c.sketch != nil && start >= c.exactSince {
		c.sketch = nil
	}
}

// count returns the distinct visitors of the window, whose seconds are
// those after before and up to now, and whether that is an estimate. An
// estimate under half the cap starts rebuilding an exact set from the next
// second: hits for it and later all pass through add from then on, held
// ones included.
func (c *visitorCount) count(before, now int64) (visitors int64, approximate bool) {
	if c.sketch == nil {
		return int64(len(c.exact)), false
	}
	visitors = c.sketch.estimate(before)
	if c.exact == nil && visitors < int64(c.max/2) {
		c.exact = make(map[uint64]int64)
		c.exactSince = now + 1
	}
	return visitors, true
}
