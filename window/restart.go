package window

import "time"

// Restart moves the end of a window that has counted no request to now,
// back or forth, and reports whether it did: a window that ends at the
// newest line's time cannot know, before its first line, where it ends,
// and follows the clock until then. The lines rejected meanwhile stay
// counted, in its new last second. A window holding a request, counted or
// held for a later second, is left as it is.
func (w *Window) Restart(now time.Time) bool {
	if w.requests != 0 || w.holds() {
		return false
	}
	rejected := w.rejected
	for i := range w.slots {
		w.evict(&w.slots[i])
	}
	w.slots = nil // made again, from the new end, on first use
	w.now = now.Unix()
	w.visitors.rebuilt(w.Start())
	if rejected > 0 {
		w.slot(w.now).rejected += rejected
		w.rejected += rejected
	}
	w.changed = true
	return true
}

// Empty reports whether the window has counted nothing: no request,
// counted or held, and no rejected line.
func (w *Window) Empty() bool { return w.requests == 0 && w.rejected == 0 && !w.holds() }

// holds reports whether a hit is held for a second after the window's end.
func (w *Window) holds() bool {
	for i := range w.future {
		if w.future[i].sec != -1 && len(w.future[i].hits) > 0 {
			return true
		}
	}
	return false
}
