package live

import (
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/window"
)

// Checkpoint is what Restore reads of a store: the newest stored minute,
// the stored minutes with their visitors, and the live window's seconds as
// the last commits checkpointed them. *storage.Store is one.
type Checkpoint interface {
	// Last returns the start of the newest stored minute; ok is false when
	// nothing is stored.
	Last() (t time.Time, ok bool, err error)
	// Minutes returns the stored minutes in [from, to], oldest first.
	Minutes(from, to time.Time) ([]logtally.Bucket, error)
	// MinuteVisitors returns the exact visitor set of a stored minute, if
	// it is still kept.
	MinuteVisitors(minute time.Time) (set []uint64, ok bool, err error)
	// WindowSeconds returns the checkpointed live-window seconds in
	// [from, to], unix seconds, oldest first.
	WindowSeconds(from, to int64) ([]logtally.Second, error)
}

// Restore returns a live window that continues where the stored counts
// stop, so that a restart shows the same counts as a run that never
// stopped.
//
// The window ends at now, or with anchor AnchorLog at the last second of
// the newest stored minute. With AnchorLog and nothing stored, it ends at
// now too, and follows the clock until the first line says where it ends
// (see windows.restart). The stored
// minutes are the truth, whoever wrote them: a run, which also checkpoints
// the window per second, or a replay, which does not. Each minute of the
// window is put back exactly from its checkpointed seconds, and what the
// stored minute holds beyond them (the lines a replay added, or the whole
// minute if nothing checkpointed it) is added at the minute's last second,
// or at the window's last second if the minute is not over yet: with the
// minute's visitors, so that visitors stay exact, and its top pages for
// what they hold beyond the seconds. Such lines leave the window up to a
// minute late. The lines rejected in each minute count in its last second
// the same way.
//
// A window that starts inside a minute holds only part of it, and the
// checkpoint may hold only part of it too: a run drops the seconds that
// leave its window. That first minute is topped up from the stored minute
// only when the checkpoint is known to hold all of its seconds, or when
// nothing is checkpointed; otherwise it comes from its seconds alone.
func Restore(store Checkpoint, cfg window.Config, anchor string, now time.Time) (*window.Window, error) {
	end, err := windowEnd(store, anchor, now)
	if err != nil {
		return nil, err
	}
	w := window.New(cfg, end)
	first := logtally.FloorDiv(w.Start(), 60) * 60 // the minute the window starts in
	// Every checkpointed second of the window's minutes, held ones after
	// its end included, so that a minute compares with all its seconds.
	seconds, err := store.WindowSeconds(first, logtally.FloorDiv(end.Unix(), 60)*60+59)
	if err != nil {
		return nil, err
	}
	wholeFirst, err := wholeFirstMinute(store, w.Start(), seconds)
	if err != nil {
		return nil, err
	}
	minutes, err := store.Minutes(time.Unix(first, 0), end)
	if err != nil {
		return nil, err
	}
	checkpointed := seedSeconds(w, seconds, end.Unix())
	for _, m := range minutes {
		w.SeedRejected(m.Time.Unix()+59, m.Rejected)
		if m.Time.Unix() == first && !wholeFirst {
			continue // its seconds alone
		}
		if err := topUp(w, store, m, checkpointed[m.Time.Unix()]); err != nil {
			return nil, err
		}
	}
	w.Publish()
	return w, nil
}

// windowEnd returns where a restored window ends: now, or with AnchorLog at
// the last second of the newest stored minute (now when nothing is
// stored).
func windowEnd(store Checkpoint, anchor string, now time.Time) (time.Time, error) {
	if anchor != AnchorLog {
		return now, nil
	}
	last, ok, err := store.Last()
	if err != nil || !ok {
		return now, err
	}
	return last.Add(time.Minute - time.Second), nil
}

// wholeFirstMinute reports whether the checkpoint holds every second of the
// minute a window starting at start starts in, given the checkpointed
// seconds from that minute on: when the window starts with the minute, or
// its first second is checkpointed; or when a second checkpointed before
// the minute shows that the run's window reached back past it, so none of
// its seconds were dropped; or when no second is checkpointed at all, so
// that nothing but the minutes holds it.
func wholeFirstMinute(store Checkpoint, start int64, seconds []logtally.Second) (bool, error) {
	first := logtally.FloorDiv(start, 60) * 60
	if first == start || len(seconds) > 0 && seconds[0].Time == first {
		return true, nil
	}
	var earlier []logtally.Second
	if first > 0 {
		var err error
		if earlier, err = store.WindowSeconds(0, first-1); err != nil {
			return false, err
		}
	}
	return len(earlier) > 0 || len(seconds) == 0, nil
}

// seedSeconds puts the checkpointed seconds up to end back in w, and
// returns what they hold by minute.
func seedSeconds(w *window.Window, seconds []logtally.Second, end int64) map[int64]*logtally.Second {
	checkpointed := make(map[int64]*logtally.Second) // by minute
	for _, sec := range seconds {
		if sec.Time <= end {
			w.Seed(sec.Time, sec.Requests, sec.PageViews, sec.Visitors, sec.Paths)
			w.SeedPairs(sec.Time, sec.PathVisitors) // a named counter's visitors per key
		}
		m := logtally.FloorDiv(sec.Time, 60) * 60
		c := checkpointed[m]
		if c == nil {
			c = &logtally.Second{Time: m, Paths: make(map[string]int64)}
			checkpointed[m] = c
		}
		c.Requests += sec.Requests
		c.PageViews += sec.PageViews
		for p, n := range sec.Paths {
			c.Paths[p] += n
		}
	}
	return checkpointed
}

// topUp adds what a stored minute holds beyond its checkpointed seconds c
// (nil for none) at its last second: with the minute's visitors, and its
// top pages for what they hold beyond the seconds.
func topUp(w *window.Window, store Checkpoint, m logtally.Bucket, c *logtally.Second) error {
	if c == nil {
		c = &logtally.Second{}
	}
	requests := max(m.Requests-c.Requests, 0)
	pageviews := max(m.PageViews-c.PageViews, 0)
	if requests == 0 && pageviews == 0 {
		return nil // the checkpoint holds the whole minute
	}
	var visitors []uint64
	paths := make(map[string]int64, len(m.Top))
	if pageviews > 0 {
		var err error
		if visitors, _, err = store.MinuteVisitors(m.Time); err != nil {
			return err
		}
		for _, p := range m.Top {
			if n := p.PageViews - c.Paths[p.Path]; n > 0 {
				paths[p.Path] = n
			}
		}
	}
	w.Seed(m.Time.Unix()+59, requests, pageviews, visitors, paths)
	return nil
}
