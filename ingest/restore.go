package ingest

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
// the newest stored minute (at 1970 when nothing is stored). It is refilled
// exactly from the per-second state that a previous run's commits kept, and,
// for the older part of the window that only a replay wrote (replay keeps
// no per-second state), to the minute from the stored minutes: each such
// minute counts in its last second, or in the window's last second if the
// minute is not over yet, and so leaves the window up to a minute early.
func Restore(store Checkpoint, cfg window.Config, anchor string, now time.Time) (*window.Window, error) {
	end := now
	if anchor == AnchorLog {
		last, ok, err := store.Last()
		if err != nil {
			return nil, err
		}
		end = last.Add(time.Minute - time.Second)
		if !ok {
			end = time.Unix(0, 0)
		}
	}
	w := window.New(cfg, end)
	start := w.Start()
	seconds, err := store.WindowSeconds(start, end.Unix())
	if err != nil {
		return nil, err
	}
	exactFrom := end.Unix() + 1
	if len(seconds) > 0 {
		exactFrom = seconds[0].Time - seconds[0].Time%60 // whole minutes before it
	}
	minutes, err := store.Minutes(time.Unix(start, 0), time.Unix(exactFrom-1, 0))
	if err != nil {
		return nil, err
	}
	for _, m := range minutes {
		if m.Time.Unix() >= exactFrom {
			continue // the stored seconds hold it
		}
		visitors, _, err := store.MinuteVisitors(m.Time)
		if err != nil {
			return nil, err
		}
		paths := make(map[string]int64, len(m.Top))
		for _, p := range m.Top {
			paths[p.Path] = p.PageViews
		}
		w.Seed(m.Time.Unix()+59, m.Requests, m.PageViews, visitors, paths)
	}
	for _, sec := range seconds {
		w.Seed(sec.Time, sec.Requests, sec.PageViews, sec.Visitors, sec.Paths)
	}
	w.Publish()
	return w, nil
}
