package live

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logtally/logtally"
)

// Metrics of the windows, read at scrape time from their published
// snapshots; the core's (lines, commits, sites) come with them.
var (
	windowVisitorsDesc  = prometheus.NewDesc("logtally_window_visitors", "Distinct visitors in the live window.", nil, nil)
	windowPageViewsDesc = prometheus.NewDesc("logtally_window_pageviews", "Page views in the live window.", nil, nil)
	windowRequestsDesc  = prometheus.NewDesc("logtally_window_requests", "Requests in the live window.", nil, nil)

	// With several sites, which --max-sites bounds, each has its own.
	siteVisitorsDesc = prometheus.NewDesc("logtally_site_window_visitors", "Distinct visitors of a site in the live window.",
		[]string{"site"}, nil)
	sitePageViewsDesc = prometheus.NewDesc("logtally_site_window_pageviews", "Page views of a site in the live window.",
		[]string{"site"}, nil)
	siteRequestsDesc = prometheus.NewDesc("logtally_site_window_requests", "Requests of a site in the live window.",
		[]string{"site"}, nil)
	// Named counters: their totals, never per key (keys are unbounded),
	// named as the core's logtally_named_count_lines_total is.
	counterWindowDesc = prometheus.NewDesc("logtally_named_count_window_lines", "Lines a named counter counts in the live window.",
		[]string{"counter"}, nil)
	counterVisitorsDesc = prometheus.NewDesc("logtally_named_count_window_visitors",
		"Distinct visitors of a named counter's lines in the live window.", []string{"counter"}, nil)
)

// Describe implements prometheus.Collector: a Loop reports the core's
// figures and the live windows it feeds.
func (l *Loop) Describe(ch chan<- *prometheus.Desc) {
	l.Core.Describe(ch)
	for _, d := range []*prometheus.Desc{windowVisitorsDesc, windowPageViewsDesc, windowRequestsDesc,
		siteVisitorsDesc, sitePageViewsDesc, siteRequestsDesc, counterWindowDesc, counterVisitorsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (l *Loop) Collect(ch chan<- prometheus.Metric) {
	l.Core.Collect(ch)
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	if s := l.wins.all.Current(); s != nil {
		gauge(windowVisitorsDesc, s.Visitors)
		gauge(windowPageViewsDesc, s.PageViews)
		gauge(windowRequestsDesc, s.Requests)
	}
	for _, site := range l.wins.names {
		if !logtally.IsCounterSite(site) {
			continue // a breakdown's: the API serves it
		}
		if s := l.wins.byCounter[site].Load().Current(); s != nil {
			name := strings.TrimPrefix(site, logtally.CounterSite(""))
			gauge(counterWindowDesc, s.Requests, name)
			gauge(counterVisitorsDesc, s.Visitors, name)
		}
	}
	if !l.Multi() {
		return
	}
	for _, c := range l.Sites() {
		gauge(siteVisitorsDesc, c.Visitors, c.Site)
		gauge(sitePageViewsDesc, c.PageViews, c.Site)
		gauge(siteRequestsDesc, c.Requests, c.Site)
	}
}
