package status

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/fleet"
)

// fleetStatus is the fleet part of /api/v1/status. Shipping to the fleet
// database never makes the daemon unready: while it fails, the node counts
// locally and its own answers are right; only a full outbox, which pauses
// reading, does (through the pipeline's failing commit).
func fleetStatus(s fleet.NodeStats, now time.Time) *api.FleetStatus {
	st := &api.FleetStatus{Node: s.Node, State: s.State, PendingBatches: s.Outbox.Entries, PendingBytes: s.Outbox.Bytes,
		OldestPendingSeconds: age(s.Outbox.Oldest, now), LastSeq: s.Outbox.LastSeq, AckedSeq: s.Acked,
		Applied: s.Applied, Duplicates: s.Duplicates, Failures: s.Failures, LastErrorAt: s.LastErrorAt.UTC(),
		AsOf: s.AsOf.UTC()}
	if s.LastError != nil {
		st.LastError = s.LastError.Error()
	}
	if s.RefreshError != nil {
		st.RefreshError = s.RefreshError.Error()
	}
	if c := s.Clock; !c.Measured.IsZero() {
		st.Clock = &api.ClockStatus{OffsetSeconds: c.Offset.Seconds(), MaxSkewSeconds: c.MaxSkew.Seconds(),
			MeasuredAt: c.Measured.UTC(), FutureLines: c.Future}
	}
	return st
}

// age is how long ago t was, in seconds; 0 for a zero t.
func age(t, now time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return max(now.Sub(t).Seconds(), 0)
}

var (
	outboxBatchesDesc = prometheus.NewDesc("logtally_fleet_outbox_batches",
		"Committed batches not yet shipped to the fleet database.", nil, nil)
	outboxBytesDesc = prometheus.NewDesc("logtally_fleet_outbox_bytes",
		"Bytes of the committed batches not yet shipped to the fleet database.", nil, nil)
	outboxAgeDesc = prometheus.NewDesc("logtally_fleet_outbox_oldest_seconds",
		"Age of the oldest batch not yet shipped to the fleet database; 0 when none waits.", nil, nil)
	shippedDesc = prometheus.NewDesc("logtally_fleet_shipped_batches_total",
		"Batches the fleet database acknowledged since start: applied, or duplicate (it had them already).",
		[]string{"result"}, nil)
	shipFailuresDesc = prometheus.NewDesc("logtally_fleet_ship_failures_total",
		"Attempts to reach or ship to the fleet database that failed and were retried.", nil, nil)
	shippingDesc = prometheus.NewDesc("logtally_fleet_shipping",
		"1 while shipping to the fleet database works, 0 while it is connecting, retrying, blocked or stopped.", nil, nil)
	blockedDesc = prometheus.NewDesc("logtally_fleet_blocked",
		"1 while shipping waits on an error only a fix can mend (state blocked: a wrong password, a missing database or privilege, a refused batch), tried again every minute; the log and last_error say what to do.",
		nil, nil)
	viewAgeDesc = prometheus.NewDesc("logtally_fleet_view_age_seconds",
		"Age of the fleet counts the API serves (absent before the first read).", nil, nil)
	clockOffsetDesc = prometheus.NewDesc("logtally_fleet_clock_offset_seconds",
		"This node's clock minus the fleet database's, as last measured (absent before the first measure).", nil, nil)
	futureLinesDesc = prometheus.NewDesc("logtally_fleet_future_lines_total",
		"Lines left out of the fleet's live window for being dated beyond the fleet database's clock plus --max-skew.", nil, nil)
)

// fleetCollector reports fleet mode's shipping lag and view age.
type fleetCollector struct {
	stats func() fleet.NodeStats
	now   func() time.Time
}

func (c fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{outboxBatchesDesc, outboxBytesDesc, outboxAgeDesc, shippedDesc,
		shipFailuresDesc, shippingDesc, blockedDesc, viewAgeDesc, clockOffsetDesc, futureLinesDesc} {
		ch <- d
	}
}

func (c fleetCollector) Collect(ch chan<- prometheus.Metric) {
	s, now := c.stats(), c.now()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(outboxBatchesDesc, float64(s.Outbox.Entries))
	gauge(outboxBytesDesc, float64(s.Outbox.Bytes))
	gauge(outboxAgeDesc, age(s.Outbox.Oldest, now))
	ch <- prometheus.MustNewConstMetric(shippedDesc, prometheus.CounterValue, float64(s.Applied), "applied")
	ch <- prometheus.MustNewConstMetric(shippedDesc, prometheus.CounterValue, float64(s.Duplicates), "duplicate")
	ch <- prometheus.MustNewConstMetric(shipFailuresDesc, prometheus.CounterValue, float64(s.Failures))
	up := 0.0
	if s.State == fleet.StateShipping {
		up = 1
	}
	gauge(shippingDesc, up)
	blocked := 0.0
	if s.State == fleet.StateBlocked {
		blocked = 1
	}
	gauge(blockedDesc, blocked)
	if !s.AsOf.IsZero() {
		// AsOf is by the database's clock; now, by this node's.
		gauge(viewAgeDesc, age(s.AsOf.Add(s.Clock.Offset), now))
	}
	if !s.Clock.Measured.IsZero() {
		gauge(clockOffsetDesc, s.Clock.Offset.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(futureLinesDesc, prometheus.CounterValue, float64(s.Clock.Future))
}
