package window

import (
	"maps"
	"slices"
)

// Clone returns a window that holds what w holds and shares nothing with
// it: from then on each counts its own hits. Named counters that have
// counted the same lines share one window; when one of them counts a
// line the others do not, it is given a clone to count on its own (see
// ingest/live). It costs a copy of the window, once.
func (w *Window) Clone() *Window {
	c := &Window{length: w.length, skew: w.skew, now: w.now, counts: w.counts, pages: w.pages, changed: true,
		paths: w.paths.clone(), visitors: w.visitors.clone(), pathVisitors: w.pathVisitors.clone(),
		refs: refCompaction{after: w.refs.after, minStale: w.refs.minStale}}
	if w.slots != nil {
		c.slots = make([]slot, len(w.slots))
		for i, s := range w.slots {
			c.slots[i] = slot{sec: s.sec, counts: s.counts, pairs: slices.Clone(s.pairs),
				visitors: slices.Clone(s.visitors), paths: slices.Clone(s.paths)}
		}
	}
	c.future = make([]future, len(w.future))
	for i, f := range w.future {
		c.future[i] = future{sec: f.sec, hits: slices.Clone(f.hits), bytes: slices.Clone(f.bytes)}
	}
	c.current.Store(w.current.Load()) // snapshots are immutable
	return c
}

func (t *pathTable) clone() *pathTable {
	c := *t
	c.index = maps.Clone(t.index)
	c.entries, c.free = slices.Clone(t.entries), slices.Clone(t.free)
	c.buckets, c.freeB = slices.Clone(t.buckets), slices.Clone(t.freeB)
	return &c
}

func (v visitorCount) clone() visitorCount {
	v.exact = maps.Clone(v.exact)
	if v.sketch != nil {
		s := *v.sketch
		v.sketch = &s
	}
	return v
}

func (p pathVisitors) clone() pathVisitors {
	p.pairs = maps.Clone(p.pairs)
	return p
}

// Alike reports whether w and o are configured alike (length, skew, the
// paths, visitors and pairs they hold, the pages a snapshot carries), so
// that one may stand for the other while they hold the same hits.
func (w *Window) Alike(o *Window) bool {
	return w.length == o.length && w.skew == o.skew && w.pages == o.pages && w.paths.max == o.paths.max &&
		w.visitors.max == o.visitors.max && w.pathVisitors.max == o.pathVisitors.max &&
		(w.pathVisitors.pairs == nil) == (o.pathVisitors.pairs == nil)
}
