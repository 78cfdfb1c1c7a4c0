package window

import "github.com/logtally/logtally"

// future holds the hits of one second after now.
type future struct {
	sec   int64
	hits  []heldHit
	bytes []byte // the hits' paths, end to end
}

// heldHit is one held hit; its path is in its future's bytes.
type heldHit struct {
	visitor  uint64
	off, n   uint32 // path in future.bytes
	pageView bool
}

// hold keeps a future hit, with a copy of its path, until its second.
func (w *Window) hold(h logtally.Hit) {
	f := &w.future[mod(h.Time, w.skew)]
	if f.sec != h.Time {
		f.sec = h.Time
		f.hits = f.hits[:0]
		f.bytes = f.bytes[:0]
	}
	held := heldHit{visitor: h.Visitor, off: uint32(len(f.bytes)), pageView: h.PageView}
	if h.PageView { // only page views count their path
		held.n = uint32(len(h.Path))
		f.bytes = append(f.bytes, h.Path...)
	}
	f.hits = append(f.hits, held)
}

// release counts the held hits of second sec, now inside the window.
func (w *Window) release(sec int64) {
	f := &w.future[mod(sec, w.skew)]
	if f.sec != sec {
		return
	}
	f.sec = -1
	if sec <= w.now-w.length {
		return // the window jumped past it: history only
	}
	for _, h := range f.hits {
		w.add(sec, h.pageView, h.visitor, f.bytes[h.off:h.off+h.n])
	}
}
