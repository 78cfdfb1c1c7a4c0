package api

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics are the API's figures in /metrics: every request by route
// and status, and how long each took to answer by route. An event stream
// lasts as long as its client stays, which says nothing of the API's
// speed: its requests are counted, not timed.
type requestMetrics struct {
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	streams   map[string]bool // the routes that are event streams
}

// newRequestMetrics registers the API's figures on reg.
func newRequestMetrics(reg *prometheus.Registry, streams map[string]bool) *requestMetrics {
	m := &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logtally_api_requests_total", Help: "API requests by route and status.",
		}, []string{"route", "code"}),
		// From half a millisecond (an answer from the live window) to
		// about 4 s (a year of history by the minute, capped).
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "logtally_api_request_duration_seconds", Help: "Time to answer an API request, by route (event streams aside).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"route"}),
		streams: streams,
	}
	reg.MustRegister(m.requests, m.durations)
	return m
}

// count counts a request under route with the status it was answered: a
// request refused before any route is chosen, which is not timed.
func (m *requestMetrics) count(route string, status int) {
	if m != nil {
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	}
}

// observe counts a request of route answered with status, which took took.
func (m *requestMetrics) observe(route string, status int, took time.Duration) {
	if m == nil {
		return
	}
	m.count(route, status)
	if !m.streams[route] {
		m.durations.WithLabelValues(route).Observe(took.Seconds())
	}
}
