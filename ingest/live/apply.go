package live

import (
	"time"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/window"
)

// apply counts a routed result in the windows and in the batches, hit by
// hit, as ingest.Core.Apply does the batches: every hit goes to the
// all-sites view's window and batch, to those of the counters it counts
// and to its site's, its second checkpointed when it is inside the window;
// a hit too far ahead of the window's end counts as a rejected line
// instead. Then the chunk's lines, its rejected lines and its position
// count, in the windows and the batches.
func (l *Loop) apply(r *ingest.Result) {
	w := &l.wins
	all := w.all
	if w.anchor == AnchorClock {
		// The window's end is at least the clock that Parse judged the
		// lines by, so a line Parse let through is not too new for it.
		all.Advance(r.Now)
	}
	allSite := l.AllSites()
	r.NumberPaths(allSite.Batch)
	parsed := int64(0)
	mi := 0 // r's matches from mi on are of hit i and after
	for i := range r.Hits {
		h := &r.Hits[i]
		first := mi
		mi = r.MatchesEnd(i, mi)
		if w.clock {
			w.restart(h.Time)
		}
		if w.anchor == AnchorLog && h.Time > w.last {
			w.last = h.Time
			all.Advance(time.Unix(h.Time, 0))
		}
		outcome := all.Add(*h)
		s := r.Site(i)
		if outcome == window.TooNew {
			// The window counted it as rejected already.
			if s != nil {
				sw := w.sites[s.ID()]
				w.advance(sw, r.Now)
				sw.Reject()
			}
			l.RejectHit(s)
			continue
		}
		parsed++
		second := outcome == window.Counted || outcome == window.Held
		r.AddTo(allSite.Batch, i, second)
		for _, m := range r.Matches(first, mi) {
			ch := r.CounterHit(h, m)
			w.countMatch(m, ch, r.Now)
			l.CountMatch(m, &ch, second)
		}
		if s != nil {
			sw := w.sites[s.ID()]
			w.advance(sw, r.Now)
			sw.Add(*h)
			l.AddToSite(s, h, second)
		}
	}
	w.reject(r)
	l.ApplyLines(r, parsed)
}

// reject counts a result's rejected lines in the all-sites view's window,
// and in the window of their file's site.
func (w *windows) reject(r *ingest.Result) {
	n := r.RejectedLines()
	if n == 0 {
		return
	}
	for range n {
		w.all.Reject()
	}
	if s := r.FileSite(); s != nil {
		sw := w.sites[s.ID()]
		w.advance(sw, r.Now)
		for range n {
			sw.Reject()
		}
	}
}
