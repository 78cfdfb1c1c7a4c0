package ingest

import "github.com/prometheus/client_golang/prometheus"

// Metrics. Every one is read at scrape time from counters the pipeline
// keeps anyway, so metrics cost nothing per line.
var (
	linesDesc = prometheus.NewDesc("logtally_lines_total", "Log lines read, by result and rejection reason.",
		[]string{"result", "reason"}, nil)
	bytesDesc = prometheus.NewDesc("logtally_bytes_read_total", "Bytes of log lines read.", nil, nil)
	readyDesc = prometheus.NewDesc("logtally_store_ready", "1 while commits succeed, 0 while they fail.", nil, nil)

	windowVisitorsDesc  = prometheus.NewDesc("logtally_window_visitors", "Distinct visitors in the live window.", nil, nil)
	windowPageViewsDesc = prometheus.NewDesc("logtally_window_pageviews", "Page views in the live window.", nil, nil)
	windowRequestsDesc  = prometheus.NewDesc("logtally_window_requests", "Requests in the live window.", nil, nil)

	// With several sites, which --max-sites bounds, each has its own.
	sitesDesc      = prometheus.NewDesc("logtally_sites", "Sites counted apart (at most --max-sites, and (other)).", nil, nil)
	otherLinesDesc = prometheus.NewDesc("logtally_site_other_lines_total",
		"Lines of sites first seen past --max-sites, counted under (other).", nil, nil)
	siteVisitorsDesc = prometheus.NewDesc("logtally_site_window_visitors", "Distinct visitors of a site in the live window.",
		[]string{"site"}, nil)
	sitePageViewsDesc = prometheus.NewDesc("logtally_site_window_pageviews", "Page views of a site in the live window.",
		[]string{"site"}, nil)
	// Named counters: their totals, never per key (keys are unbounded).
	counterLinesDesc = prometheus.NewDesc("logtally_counter_lines_total", "Lines a named counter counted since start.",
		[]string{"counter"}, nil)
	counterWindowDesc = prometheus.NewDesc("logtally_counter_window_lines", "Lines a named counter counts in the live window.",
		[]string{"counter"}, nil)
	counterVisitorsDesc = prometheus.NewDesc("logtally_counter_window_visitors",
		"Distinct visitors of a named counter's lines in the live window.", []string{"counter"}, nil)
	siteRequestsDesc = prometheus.NewDesc("logtally_site_window_requests", "Requests of a site in the live window.",
		[]string{"site"}, nil)
)

func newCommitHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "logtally_commit_duration_seconds",
		Help: "Time to commit a batch to the database.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
}

// Describe implements prometheus.Collector: a Pipeline reports the lines
// it read, parsed and rejected, the bytes it read, its commits, and the
// live window it feeds.
func (p *Pipeline) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{linesDesc, bytesDesc, readyDesc,
		windowVisitorsDesc, windowPageViewsDesc, windowRequestsDesc,
		sitesDesc, otherLinesDesc, siteVisitorsDesc, sitePageViewsDesc, siteRequestsDesc,
		counterLinesDesc, counterWindowDesc, counterVisitorsDesc} {
		ch <- d
	}
	p.commitSeconds.Describe(ch)
}

// Collect implements prometheus.Collector.
func (p *Pipeline) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(linesDesc, prometheus.CounterValue, float64(p.Parsed()), "parsed", "")
	for reason, n := range p.RejectedBy() {
		ch <- prometheus.MustNewConstMetric(linesDesc, prometheus.CounterValue, float64(n), "rejected", reason)
	}
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.CounterValue, float64(p.BytesRead()))
	ready := 1.0
	if p.Err() != nil {
		ready = 0
	}
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, ready)
	p.commitSeconds.Collect(ch)
	if s := p.all.win.Current(); s != nil {
		ch <- prometheus.MustNewConstMetric(windowVisitorsDesc, prometheus.GaugeValue, float64(s.Visitors))
		ch <- prometheus.MustNewConstMetric(windowPageViewsDesc, prometheus.GaugeValue, float64(s.PageViews))
		ch <- prometheus.MustNewConstMetric(windowRequestsDesc, prometheus.GaugeValue, float64(s.Requests))
	}
	if p.matcher != nil {
		for i, c := range p.matcher.Counters() {
			ch <- prometheus.MustNewConstMetric(counterLinesDesc, prometheus.CounterValue, float64(p.countedLines[i].Load()), c.Name)
			if s := p.counters[i].win.Current(); s != nil {
				ch <- prometheus.MustNewConstMetric(counterWindowDesc, prometheus.GaugeValue, float64(s.Requests), c.Name)
				ch <- prometheus.MustNewConstMetric(counterVisitorsDesc, prometheus.GaugeValue, float64(s.Visitors), c.Name)
			}
		}
	}
	if !p.multi {
		return
	}
	st := p.SiteStats()
	ch <- prometheus.MustNewConstMetric(sitesDesc, prometheus.GaugeValue, float64(st.Sites))
	ch <- prometheus.MustNewConstMetric(otherLinesDesc, prometheus.CounterValue, float64(st.OtherLines))
	for _, c := range p.Sites() {
		ch <- prometheus.MustNewConstMetric(siteVisitorsDesc, prometheus.GaugeValue, float64(c.Visitors), c.Site)
		ch <- prometheus.MustNewConstMetric(sitePageViewsDesc, prometheus.GaugeValue, float64(c.PageViews), c.Site)
		ch <- prometheus.MustNewConstMetric(siteRequestsDesc, prometheus.GaugeValue, float64(c.Requests), c.Site)
	}
}
