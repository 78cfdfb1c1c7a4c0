package ingest

import "github.com/prometheus/client_golang/prometheus"

// Metrics. Every one is read at scrape time from counters the core keeps
// anyway, so metrics cost nothing per line. The live loop adds its
// windows' (package ingest/live).
var (
	linesDesc = prometheus.NewDesc("logtally_lines_total", "Log lines read, by result: parsed or rejected.",
		[]string{"result"}, nil)
	rejectedDesc = prometheus.NewDesc("logtally_lines_rejected_total", "Log lines rejected, by reason.",
		[]string{"reason"}, nil)
	bytesDesc = prometheus.NewDesc("logtally_bytes_read_total", "Bytes of log lines read.", nil, nil)
	readyDesc = prometheus.NewDesc("logtally_store_ready", "1 while commits succeed, 0 while they fail.", nil, nil)

	// With several sites, which --max-sites bounds.
	sitesDesc      = prometheus.NewDesc("logtally_sites", "Sites counted apart (at most --max-sites, and (other)).", nil, nil)
	otherLinesDesc = prometheus.NewDesc("logtally_site_other_lines_total",
		"Lines of sites first seen past --max-sites, counted under (other).", nil, nil)
	// Named counters: their totals, never per key (keys are unbounded).
	// The names say "named_count", not "counter": a metric's name does not
	// name a Prometheus type (promtool check metrics).
	counterLinesDesc = prometheus.NewDesc("logtally_named_count_lines_total", "Lines a named counter counted since start.",
		[]string{"counter"}, nil)
)

// Describe implements prometheus.Collector: a Core reports the lines it
// read, parsed and rejected, the bytes it read, its commits, its sites and
// its named counters' lines.
func (c *Core) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{linesDesc, rejectedDesc, bytesDesc, readyDesc, sitesDesc, otherLinesDesc, counterLinesDesc} {
		ch <- d
	}
	c.seconds.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Core) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(linesDesc, prometheus.CounterValue, float64(c.Parsed()), "parsed")
	var rejected int64 // the sum of the reasons' as this scrape read them
	for reason, n := range c.RejectedBy() {
		ch <- prometheus.MustNewConstMetric(rejectedDesc, prometheus.CounterValue, float64(n), reason)
		rejected += n
	}
	ch <- prometheus.MustNewConstMetric(linesDesc, prometheus.CounterValue, float64(rejected), "rejected")
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.CounterValue, float64(c.BytesRead()))
	ready := 1.0
	if c.Err() != nil {
		ready = 0
	}
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, ready)
	c.seconds.Collect(ch)
	if m := c.parse.matcher; m != nil {
		for i, ctr := range m.Counters() {
			ch <- prometheus.MustNewConstMetric(counterLinesDesc, prometheus.CounterValue, float64(c.CounterLines(i)), ctr.Name)
		}
	}
	if c.Multi() {
		st := c.SiteStats()
		ch <- prometheus.MustNewConstMetric(sitesDesc, prometheus.GaugeValue, float64(st.Sites))
		ch <- prometheus.MustNewConstMetric(otherLinesDesc, prometheus.CounterValue, float64(st.OtherLines))
	}
}
