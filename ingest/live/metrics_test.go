package live

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logtally/logtally/ingest/internal/ingesttest"
)

// TestMetrics: a Loop registered as a collector reports its counters, its
// commits and its window.
func TestMetrics(t *testing.T) {
	l := newLoop(t, Config{Anchor: AnchorLog}, ingesttest.Store(t), t0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(l)
	run(t, l, ingesttest.Chunks(1_000, 4096)...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// values returns the values of metric name by their labels' values,
	// joined with "/" in the order of the labels' names; for a histogram,
	// its count of observations.
	values := func(name string) map[string]float64 {
		out := map[string]float64{}
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetValue())
				}
				key := strings.Join(labels, "/")
				switch {
				case m.Counter != nil:
					out[key] = m.Counter.GetValue()
				case m.Gauge != nil:
					out[key] = m.Gauge.GetValue()
				case m.Histogram != nil:
					out[key] = float64(m.Histogram.GetSampleCount())
				}
			}
		}
		return out
	}
	lines := values("logtally_lines_total")
	var rejected float64
	for _, n := range values("logtally_lines_rejected_total") {
		rejected += n
	}
	// Chunks makes every 50th line bad.
	if lines["parsed"] != 980 || lines["rejected"] != 20 || rejected != 20 {
		t.Errorf("logtally_lines_total = %v and logtally_lines_rejected_total sums to %v, want 980 parsed and 20 rejected",
			lines, rejected)
	}
	want := map[string]float64{
		"logtally_bytes_read_total":        float64(l.BytesRead()),
		"logtally_store_ready":             1,
		"logtally_commit_duration_seconds": float64(l.Commits()),
		"logtally_window_requests":         float64(l.Snapshot().Requests),
		"logtally_window_pageviews":        float64(l.Snapshot().PageViews),
		"logtally_window_visitors":         float64(l.Snapshot().Visitors),
	}
	for name, n := range want {
		if got := values(name)[""]; got != n || n == 0 {
			t.Errorf("%s = %v, want %v, not 0", name, got, n)
		}
	}
}
