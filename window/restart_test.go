package window

import (
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// TestRestart: a window that counted no request moves its end back or
// forth, keeping the lines rejected meanwhile; one that counted a request,
// or holds one, stays where it is.
func TestRestart(t *testing.T) {
	clock := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	line := clock.Add(-6 * 24 * time.Hour)
	tests := []struct {
		name       string
		fill       func(w *Window)
		restarted  bool
		wantEnd    time.Time
		wantCounts [2]int64 // requests, rejected
	}{
		{"empty", func(*Window) {}, true, line, [2]int64{0, 0}},
		{"rejected lines only", func(w *Window) { w.Reject(); w.Reject() }, true, line, [2]int64{0, 2}},
		{"a request", func(w *Window) {
			w.Add(logtally.Hit{Time: clock.Unix() - 5, Path: []byte("/"), PageView: true, Visitor: 1})
		}, false, clock, [2]int64{1, 0}},
		{"a held request", func(w *Window) {
			w.Add(logtally.Hit{Time: clock.Unix() + 5, Path: []byte("/"), PageView: true, Visitor: 1})
		}, false, clock, [2]int64{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(Config{Length: 10 * time.Minute, MaxSkew: time.Minute}, clock)
			tt.fill(w)
			if got := w.Restart(line); got != tt.restarted {
				t.Errorf("Restart = %v, want %v", got, tt.restarted)
			}
			w.Publish()
			s := w.Current()
			if got, want := s.To, tt.wantEnd.Add(time.Second); !got.Equal(want) {
				t.Errorf("window to %s, want %s", got, want)
			}
			if got := [2]int64{s.Requests, s.Rejected}; got != tt.wantCounts {
				t.Errorf("requests, rejected = %v, want %v", got, tt.wantCounts)
			}
			// The restarted window counts a line of its new time.
			if tt.restarted && w.Add(logtally.Hit{Time: line.Unix() - 30, Path: []byte("/a"), PageView: true, Visitor: 2}) != Counted {
				t.Error("a line 30 s before the new end is not counted")
			}
		})
	}
}
