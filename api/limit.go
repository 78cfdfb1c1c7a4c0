package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
	"github.com/prometheus/client_golang/prometheus"
)

// Limits on the cost of history queries. A query's cost is the stored
// records it reads, as its range and step say before anything is read: a
// minute of range for a step under an hour (a one-day series at 5m reads
// 1,440 minutes for 288 points), an hour for 1h, a day for 1d. For
// /api/v1/pages?from&to it is the range's minutes.
const (
	// MaxSeriesReads is the most minutes a series at 5m or 15m may read
	// (31 days); past it the answer is 400, naming the fix: a longer step
	// or a shorter range. Other steps read one record a point, which
	// logtally.MaxPoints bounds.
	MaxSeriesReads = 31 * 24 * 60
	// HeavyReads is the cost past which a query is heavy: at most
	// Config.MaxHeavy heavy queries run at once, and one more is answered
	// 429 with Retry-After. Six hours of minutes; the dashboard's last hour
	// by minute and a day by hour are cheap, and cheap queries are never
	// refused.
	HeavyReads = 6 * 60
	// DefaultMaxHeavy is the default of Config.MaxHeavy.
	DefaultMaxHeavy = 4
	// heavyLogEvery is how often a refusal is logged at most.
	heavyLogEvery = time.Minute
)

// HeavyStatus is the part of GET /api/v1/status about heavy queries.
type HeavyStatus struct {
	Running   int   `json:"heavy_running"`    // heavy queries being answered
	Max       int   `json:"heavy_max"`        // at most this many at once (--max-heavy-queries)
	Refused   int64 `json:"heavy_refused"`    // answered 429 since start
	TooCostly int64 `json:"heavy_too_costly"` // answered 400 since start: past MaxSeriesReads
}

// heavy caps the heavy queries answered at once.
type heavy struct {
	slots   chan struct{}
	refused atomic.Int64
	costly  atomic.Int64
	ran     atomic.Bool // a heavy query ran
	logger  *slog.Logger

	mu      sync.Mutex
	logged  time.Time // when a refusal was last logged
	unseen  int64     // refusals since, not logged
	metrics *heavyMetrics
}

type heavyMetrics struct {
	refused prometheus.Counter
	running prometheus.GaugeFunc
}

func newHeavy(max int, logger *slog.Logger, reg *prometheus.Registry) *heavy {
	h := &heavy{slots: make(chan struct{}, max), logger: logger}
	if reg != nil {
		h.metrics = &heavyMetrics{
			refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "logtally_api_heavy_refused_total",
				Help: "Heavy history queries refused with 429 because --max-heavy-queries were running."}),
			running: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "logtally_api_heavy_running",
				Help: "Heavy history queries being answered."}, func() float64 { return float64(len(h.slots)) }),
		}
		reg.MustRegister(h.metrics.refused, h.metrics.running)
	}
	return h
}

// status reports the heavy queries' state.
func (h *heavy) status() *HeavyStatus {
	return &HeavyStatus{Running: len(h.slots), Max: cap(h.slots), Refused: h.refused.Load(), TooCostly: h.costly.Load()}
}

// refuse counts a refusal, and logs it unless one was logged in the last
// heavyLogEvery, in which case the next log line says how many it skipped.
func (h *heavy) refuse(r *http.Request, now time.Time) {
	h.refused.Add(1)
	if h.metrics != nil {
		h.metrics.refused.Inc()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.logged.IsZero() && now.Sub(h.logged) < heavyLogEvery {
		h.unseen++
		return
	}
	h.logger.Warn("heavy query refused: too many running (--max-heavy-queries)", "max", cap(h.slots),
		"path", r.URL.Path, "query", r.URL.RawQuery, "refused_since_last_log", h.unseen, "refused_total", h.refused.Load())
	h.logged, h.unseen = now, 0
}

// A cost reads a request's parameters and returns the records it reads,
// and the most it may read (0 for no limit). ok is false when the
// parameters do not parse: the endpoint then answers the 400.
type cost func(*request) (reads, most int, ok bool)

// admit weighs a request by its cost: one that would read more than its
// cost allows is a 400, and a heavy one takes one of the heavy queries'
// places (held: the caller gives it back with heavy.release), or is a 429
// when none is free. A cheap one is never refused.
func (s *Server) admit(r *request, cost cost) (held bool, err error) {
	n, most, ok := cost(r)
	if !ok || n <= HeavyReads {
		return false, nil
	}
	if most > 0 && n > most {
		s.heavy.costly.Add(1)
		return false, invalid("the range reads " + strconv.Itoa(n) + " minutes, more than " +
			strconv.Itoa(most) + " (31 days): use step=1h or 1d, or a shorter range")
	}
	select {
	case s.heavy.slots <- struct{}{}:
	default:
		s.heavy.refuse(r.Request, s.deps.Now())
		return false, &Error{Code: CodeTooMany, RetryAfter: time.Second, Message: "too many heavy queries at once (" +
			strconv.Itoa(cap(s.heavy.slots)) + "): retry in a second, or ask for a coarser step or a shorter range"}
	}
	s.heavy.ran.Store(true)
	return true, nil
}

// release gives back the place a heavy query held.
func (h *heavy) release() { <-h.slots }

// seriesCost is the cost of GET /api/v1/series. A series at 5m or 15m
// may read MaxSeriesReads minutes.
func (s *Server) seriesCost(r *request) (reads, most int, ok bool) {
	from, to, err := s.rangeParams(r, DefaultSeriesSpan)
	if err != nil {
		return 0, 0, false
	}
	name, err := r.single("step", "1m")
	step, known := logtally.Steps[name]
	if err != nil || !known {
		return 0, 0, false
	}
	switch {
	case step == 24*time.Hour:
		return int(to.Sub(from)/step) + 2, 0, true // a day may be 25 hours long
	case step == time.Minute:
		return int(to.Sub(from.Truncate(step))/step) + 1, 0, true
	case step < time.Hour:
		return int(to.Sub(from.Truncate(step))/time.Minute) + 1, MaxSeriesReads, true
	}
	return int(to.Sub(from.Truncate(step))/step) + 1, 0, true
}

// pagesCost is the cost of GET /api/v1/pages: the minutes of its range,
// none for the live window.
func (s *Server) pagesCost(r *request) (reads, most int, ok bool) {
	if !r.has("from") || !r.has("to") {
		return 0, 0, true
	}
	from, to, err := s.rangeParams(r, 0)
	if err != nil {
		return 0, 0, false
	}
	return int(min(to.Sub(from), MaxPagesRange)/time.Minute) + 1, 0, true
}
