package ingest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// TestFutureLinesRejected: a line dated further ahead of the clock than
// --max-skew is rejected, counted under its reason and kept as a sample,
// by replay and by run with --window-end log as by run on the clock. Before,
// replay and --window-end log took a line of 2100: it was stored, and the
// window ended in 2100.
func TestFutureLinesRejected(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	stamp := func(t time.Time) string { return t.Format("02/Jan/2006:15:04:05 -0700") }
	data := []byte(`192.0.2.1 - - [` + stamp(now.Add(-time.Minute)) + `] "GET /a HTTP/1.1" 200 5 "-" "Firefox"
192.0.2.2 - - [` + stamp(now.Add(2*time.Minute)) + `] "GET /skewed HTTP/1.1" 200 5 "-" "Firefox"
192.0.2.3 - - [21/Nov/2100:12:00:00 +0000] "GET /future HTTP/1.1" 200 5 "-" "Firefox"
192.0.2.4 - - [` + stamp(now.Add(2*time.Minute+time.Second)) + `] "GET /ahead HTTP/1.1" 200 5 "-" "Firefox"
`)
	for _, tt := range []struct {
		name   string
		anchor string
		replay bool
	}{
		{"replay", AnchorLog, true},
		{"run --window-end log", AnchorLog, false},
		{"run --window-end clock", AnchorClock, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store, err := storage.Open(storage.Config{Path: filepath.Join(t.TempDir(), "db"), TZ: "UTC"},
				func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			format, _ := parser.New("combined")
			classifier, _ := classify.New(classify.DefaultConfig(), 0)
			win := window.New(window.Config{Length: 10 * time.Minute, MaxSkew: 2 * time.Minute}, now)
			if tt.anchor == AnchorLog {
				win = window.New(window.Config{Length: 10 * time.Minute, MaxSkew: 2 * time.Minute}, time.Unix(0, 0))
			}
			p := mustNew(t, Config{Anchor: tt.anchor, PersistWindow: !tt.replay}, Deps{Format: format, Classifier: classifier,
				Window: win, Store: store, Now: func() time.Time { return now }})
			in := make(chan tailer.Chunk, 1)
			in <- tailer.Chunk{File: "f", Data: data, Offset: int64(len(data))}
			close(in)
			if tt.replay {
				err = p.Replay(context.Background(), in)
			} else {
				err = p.Run(context.Background(), in)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.RejectedBy()[window.ErrTooNew.Error()]; got != 2 || p.Parsed() != 2 {
				t.Errorf("rejected as too far in the future: %d, parsed %d; want 2 and 2", got, p.Parsed())
			}
			var samples []string
			for _, s := range p.Samples() {
				if s.Reason == window.ErrTooNew.Error() {
					samples = append(samples, s.Line[:9])
				}
			}
			if len(samples) != 2 || samples[0] != "192.0.2.3" || samples[1] != "192.0.2.4" {
				t.Errorf("samples of future lines: %q, want the lines of 2100 and of 2m1s ahead", samples)
			}
			if end := win.Current().To; end.After(now.Add(2*time.Minute + time.Second)) {
				t.Errorf("the window ends at %s, after the clock and its skew", end)
			}
			future, err := store.Minutes(now.Add(3*time.Minute), time.Date(2101, 1, 1, 0, 0, 0, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			if len(future) != 0 {
				t.Errorf("stored minutes after the clock and its skew: %+v", future)
			}
			minutes, _ := store.Minutes(now.Add(-time.Hour), now.Add(time.Hour))
			var requests, rejected int64
			for _, m := range minutes {
				requests += m.Requests
				rejected += m.Rejected
			}
			if requests != 2 || rejected != 2 {
				t.Errorf("stored %d requests and %d rejected lines, want 2 and 2", requests, rejected)
			}
		})
	}
}
