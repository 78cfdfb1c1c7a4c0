package live

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/ingest/replay"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

// TestFutureLinesRejected: a line dated further ahead of the clock than
// --max-skew is rejected, counted under its reason and kept as a sample,
// by replay and by run with --window-end log as by run on the clock. Before,
// replay and --window-end log took a line of 2100: it was stored, and the
// window ended in 2100.
func TestFutureLinesRejected(t *testing.T) {
	now := t0
	stamp := func(t time.Time) string { return t.Format("02/Jan/2006:15:04:05 -0700") }
	data := []byte(`192.0.2.1 - - [` + stamp(now.Add(-time.Minute)) + `] "GET /a HTTP/1.1" 200 5 "-" "Firefox"
192.0.2.2 - - [` + stamp(now.Add(2*time.Minute)) + `] "GET /skewed HTTP/1.1" 200 5 "-" "Firefox"
192.0.2.3 - - [21/Nov/2100:12:00:00 +0000] "GET /future HTTP/1.1" 200 5 "-" "Firefox"
192.0.2.4 - - [` + stamp(now.Add(2*time.Minute+time.Second)) + `] "GET /ahead HTTP/1.1" 200 5 "-" "Firefox"
`)
	if ingest.ErrTooNew.Error() != window.ErrTooNew.Error() {
		t.Errorf("ingest.ErrTooNew %q, window.ErrTooNew %q: one reason should read the same", ingest.ErrTooNew, window.ErrTooNew)
	}
	for _, tt := range []struct {
		name   string
		anchor string // "" for replay
	}{
		{"replay", ""},
		{"run --window-end log", AnchorLog},
		{"run --window-end clock", AnchorClock},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := ingesttest.Store(t)
			format, classifier := ingesttest.Combined(t)
			clock := func() time.Time { return now }
			wcfg := window.Config{Length: 10 * time.Minute, MaxSkew: 2 * time.Minute}
			core := ingest.Deps{Format: format, Classifier: classifier, Now: clock}
			in := ingesttest.Feed(tailer.Chunk{File: "f", Data: data, Offset: int64(len(data))})
			var counted *ingest.Core
			var win *window.Window
			if tt.anchor == "" {
				cfg := replay.DefaultConfig()
				cfg.Ingest.MaxSkew = wcfg.MaxSkew
				r, err := replay.New(cfg, replay.Deps{Deps: core, Store: store})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Replay(context.Background(), in); err != nil {
					t.Fatal(err)
				}
				counted = r.Core
			} else {
				win = window.New(wcfg, now)
				if tt.anchor == AnchorLog {
					win = window.New(wcfg, time.Unix(0, 0))
				}
				l := mustNew(t, Config{Anchor: tt.anchor}, Deps{Deps: core, Window: win, Store: store})
				if err := l.Run(context.Background(), in); err != nil {
					t.Fatal(err)
				}
				counted = l.Core
			}
			checkFuture(t, counted, win, now)
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

// checkFuture checks what TestFutureLinesRejected's core counted, and that
// the window, if there is one, ends before the clock and its skew.
func checkFuture(t *testing.T, core *ingest.Core, win *window.Window, now time.Time) {
	t.Helper()
	if got := core.RejectedBy()[ingest.ErrTooNew.Error()]; got != 2 || core.Parsed() != 2 {
		t.Errorf("rejected as too far in the future: %d, parsed %d; want 2 and 2", got, core.Parsed())
	}
	var samples []string
	for _, s := range core.Samples() {
		if s.Reason == ingest.ErrTooNew.Error() {
			samples = append(samples, s.Line)
		}
	}
	if len(samples) != 2 || !strings.Contains(samples[0], "/2100:") || strings.Contains(samples[1], "/2100:") {
		t.Errorf("samples of future lines: %q, want the lines of 2100 and of 2m1s ahead", samples)
	}
	if win != nil {
		if end := win.Current().To; end.After(now.Add(2*time.Minute + time.Second)) {
			t.Errorf("the window ends at %s, after the clock and its skew", end)
		}
	}
}
