package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/logtally/logtally"
)

// Limits of the history endpoints.
const (
	DefaultSeriesSpan = time.Hour
	MaxCountPaths     = 100
	MaxPathLength     = 2048
)

// SeriesBody is the body of GET /api/v1/series.
type SeriesBody struct {
	From                time.Time     `json:"from"`
	To                  time.Time     `json:"to"`
	StepSeconds         int64         `json:"step_seconds"`
	ApproximateVisitors bool          `json:"approximate_visitors"`
	Points              []SeriesPoint `json:"points"`
	AsOf                time.Time     `json:"as_of,omitzero"` // see Stats.AsOf
}

// SeriesPoint is one step of a SeriesBody.
type SeriesPoint struct {
	T         time.Time `json:"t"`
	Requests  int64     `json:"requests"`
	PageViews int64     `json:"pageviews"`
	Visitors  int64     `json:"visitors"`
}

// series answers GET /api/v1/series?from=T&to=T&step=S. T is RFC3339 or unix
// seconds; S is one of logtally.Steps. Defaults: the last hour, by minute.
func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	if s.deps.History == nil {
		writeError(w, http.StatusNotFound, "no history is kept")
		return
	}
	if err := onlyParams(r, []string{"from", "to", "step"}); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	now := s.deps.Now()
	to, err := timeParam(r, "to", now)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	from, err := timeParam(r, "from", to.Add(-DefaultSeriesSpan))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if from.After(to) {
		writeError(w, http.StatusBadRequest, "from is after to")
		return
	}
	stepName, err := single(r, "step", "1m")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	step, ok := logtally.Steps[stepName]
	if !ok {
		writeError(w, http.StatusBadRequest, "step must be one of 1m, 5m, 15m, 1h, 1d")
		return
	}
	res, err := s.deps.History.Series(from, to, step)
	if errors.Is(err, logtally.ErrTooManyPoints) {
		writeError(w, http.StatusBadRequest, "more than "+strconv.Itoa(logtally.MaxPoints)+" points: use a longer step or a shorter range")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	body := SeriesBody{From: from.UTC(), To: to.UTC(), StepSeconds: int64(step / time.Second),
		ApproximateVisitors: res.Approximate, Points: make([]SeriesPoint, len(res.Points))}
	for i, p := range res.Points {
		body.Points[i] = SeriesPoint{T: p.Time.UTC(), Requests: p.Requests, PageViews: p.PageViews, Visitors: p.Visitors}
	}
	writeJSON(w, http.StatusOK, body)
}

// CountsBody is the body of GET /api/v1/pages/count.
type CountsBody struct {
	Pages []PageCounts `json:"pages"`
	AsOf  time.Time    `json:"as_of,omitzero"` // of the window's page views; see Stats.AsOf
}

// PageCounts is one path's counts in a CountsBody.
type PageCounts struct {
	Path            string `json:"path"`
	WindowPageViews int64  `json:"window_pageviews"`
	TodayPageViews  int64  `json:"today_pageviews"`
	TotalPageViews  int64  `json:"total_pageviews"`
}

// pageCounts answers GET /api/v1/pages/count?path=A&path=B: the counter an
// article or listing shows next to each item.
func (s *Server) pageCounts(w http.ResponseWriter, r *http.Request) {
	if s.deps.History == nil {
		writeError(w, http.StatusNotFound, "no history is kept")
		return
	}
	if err := onlyParams(r, []string{"path"}); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	paths := r.URL.Query()["path"]
	if len(paths) == 0 || len(paths) > MaxCountPaths {
		writeError(w, http.StatusBadRequest, "give 1 to "+strconv.Itoa(MaxCountPaths)+" path parameters")
		return
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") || len(p) > MaxPathLength {
			writeError(w, http.StatusBadRequest, "a path must start with / and be at most "+strconv.Itoa(MaxPathLength)+" bytes")
			return
		}
	}
	counts, err := s.deps.History.PathCounts(paths, s.deps.Now())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	snap := s.deps.Snapshot()
	body := CountsBody{Pages: make([]PageCounts, len(counts))}
	for i, c := range counts {
		live, _ := snap.PathViews(c.Path)
		body.Pages[i] = PageCounts{Path: c.Path, WindowPageViews: live, TodayPageViews: c.Day, TotalPageViews: c.Total}
	}
	writeJSON(w, http.StatusOK, body)
}

// internal logs an unexpected error and answers 500 without its details.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	if s.fleetOnly {
		s.unavailable(w, r, err)
		return
	}
	s.deps.Logger.Error("api", "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "internal error")
}

// single returns a parameter given at most once, or def.
func single(r *http.Request, name, def string) (string, error) {
	vals := r.URL.Query()[name]
	switch len(vals) {
	case 0:
		return def, nil
	case 1:
		return vals[0], nil
	}
	return "", errors.New(name + " given more than once")
}

// timeParam reads a time given as RFC3339 or as unix seconds.
func timeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v, err := single(r, name, "")
	if err != nil || v == "" {
		return def, err
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > 1<<40 {
			return time.Time{}, errors.New(name + " is out of range")
		}
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, errors.New(name + " must be RFC3339 (2006-01-02T15:04:05Z) or unix seconds")
	}
	return t, nil
}
