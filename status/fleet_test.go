package status

import (
	"errors"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/fleet"
)

// TestFleetStatus: while shipping fails, the status and the metrics show
// the lag and the last error, and the daemon stays ready; of a node whose
// clock runs 5 minutes ahead of the fleet database's, they show the offset
// and the lines left out of the live window, and the view's age by either
// clock.
func TestFleetStatus(t *testing.T) {
	p, _ := pipeline(t)
	now := t0.Add(time.Hour)
	const ahead = 5 * time.Minute
	stats := fleet.NodeStats{Node: "web-1", State: fleet.StateRetrying,
		Outbox: logtally.OutboxStats{Entries: 12, Bytes: 3400, Oldest: now.Add(-90 * time.Second), LastSeq: 40},
		Acked:  28, Applied: 20, Duplicates: 1, Failures: 7, LastError: errors.New("dial tcp 127.0.0.1:5432: connection refused"),
		LastErrorAt: now.Add(-time.Second), AsOf: now.Add(-95*time.Second - ahead),
		Clock: fleet.ClockStats{Offset: ahead, Measured: now.Add(-96 * time.Second), MaxSkew: 2 * time.Minute, Future: 17}}
	r := New(Config{}, Deps{Pipeline: p, Now: func() time.Time { return now }, Fleet: func() fleet.NodeStats { return stats }})
	got := r.Status().Fleet
	want := &api.FleetStatus{Node: "web-1", State: "retrying", PendingBatches: 12, PendingBytes: 3400,
		OldestPendingSeconds: 90, LastSeq: 40, AckedSeq: 28, Applied: 20, Duplicates: 1, Failures: 7,
		LastError: "dial tcp 127.0.0.1:5432: connection refused", LastErrorAt: now.Add(-time.Second), AsOf: now.Add(-95*time.Second - ahead),
		Clock: &api.ClockStatus{OffsetSeconds: 300, MaxSkewSeconds: 120, MeasuredAt: now.Add(-96 * time.Second), FutureLines: 17}}
	if got == nil || got.Clock == nil || *got.Clock != *want.Clock {
		t.Errorf("fleet status clock = %+v, want %+v", got.Clock, want.Clock)
	}
	if got != nil {
		g, w := *got, *want
		g.Clock, w.Clock = nil, nil
		got, want = &g, &w
	}
	if got == nil || *got != *want {
		t.Errorf("fleet status = %+v\nwant %+v", got, want)
	}
	if err := r.Ready(); err != nil {
		t.Errorf("Ready() = %v while shipping fails; want ready", err)
	}
	gather := func() map[string]float64 {
		families, err := r.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		values := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				name := f.GetName()
				if len(m.GetLabel()) > 0 {
					name += " " + m.GetLabel()[0].GetValue()
				}
				values[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		return values
	}
	values := gather()
	for name, want := range map[string]float64{"logtally_fleet_outbox_batches": 12, "logtally_fleet_outbox_bytes": 3400,
		"logtally_fleet_outbox_oldest_seconds": 90, "logtally_fleet_shipped_batches_total applied": 20,
		"logtally_fleet_shipped_batches_total duplicate": 1, "logtally_fleet_ship_failures_total": 7,
		"logtally_fleet_shipping": 0, "logtally_fleet_blocked": 0, "logtally_fleet_view_age_seconds": 95,
		"logtally_fleet_clock_offset_seconds": 300, "logtally_fleet_future_lines_total": 17} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	stats.State = fleet.StateBlocked
	if got := gather()["logtally_fleet_blocked"]; got != 1 {
		t.Errorf("logtally_fleet_blocked = %v while blocked, want 1", got)
	}
}

func TestNoFleetStatusWithoutFleet(t *testing.T) {
	p, _ := pipeline(t)
	if st := New(Config{}, Deps{Pipeline: p}).Status(); st.Fleet != nil {
		t.Errorf("fleet status without fleet mode: %+v", st.Fleet)
	}
}
