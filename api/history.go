package api

import (
	"encoding/json"
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
	From                time.Time `json:"from"`
	To                  time.Time `json:"to"`
	StepSeconds         int64     `json:"step_seconds"`
	ApproximateVisitors bool      `json:"approximate_visitors"`
	// KeptFrom is the start of the first step the store holds whole under
	// its retention; absent when it holds every step (days, by default).
	KeptFrom time.Time     `json:"kept_from,omitzero"`
	Points   []SeriesPoint `json:"points"`
	AsOf     time.Time     `json:"as_of,omitzero"` // see Stats.AsOf
	// Damaged names the stored records the answer lacks because the
	// database file is damaged there; their points have null counts.
	Damaged []string `json:"damaged,omitempty"`
}

// SeriesPoint is one step of a SeriesBody. A step before kept_from, whose
// history was pruned or never kept, has null counts: it is not a zero.
type SeriesPoint struct {
	T         time.Time
	Held      bool // the store holds the step: its counts are counts
	Requests  int64
	PageViews int64
	Visitors  int64
	Status    StatusClasses
	Bytes     int64
}

// StatusClasses is requests by status class.
type StatusClasses struct {
	C1 int64 `json:"1xx"`
	C2 int64 `json:"2xx"`
	C3 int64 `json:"3xx"`
	C4 int64 `json:"4xx"`
	C5 int64 `json:"5xx"`
}

// seriesPointJSON is a SeriesPoint as JSON: nil counts are null.
type seriesPointJSON struct {
	T         time.Time      `json:"t"`
	Requests  *int64         `json:"requests"`
	PageViews *int64         `json:"pageviews"`
	Visitors  *int64         `json:"visitors"`
	Status    *StatusClasses `json:"status"`
	Bytes     *int64         `json:"bytes"`
}

// MarshalJSON writes the point, with null counts unless Held.
func (p SeriesPoint) MarshalJSON() ([]byte, error) {
	v := seriesPointJSON{T: p.T}
	if p.Held {
		v.Requests, v.PageViews, v.Visitors, v.Status, v.Bytes = &p.Requests, &p.PageViews, &p.Visitors, &p.Status, &p.Bytes
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads a point as MarshalJSON writes it.
func (p *SeriesPoint) UnmarshalJSON(b []byte) error {
	var v seriesPointJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = SeriesPoint{T: v.T, Held: v.Requests != nil}
	for dst, src := range map[*int64]*int64{&p.Requests: v.Requests, &p.PageViews: v.PageViews, &p.Visitors: v.Visitors, &p.Bytes: v.Bytes} {
		if src != nil {
			*dst = *src
		}
	}
	if v.Status != nil {
		p.Status = *v.Status
	}
	return nil
}

// series answers GET /api/v1/series?from=T&to=T&step=S. T is RFC3339, unix
// seconds or a date (a day in the store's zone; as to, the day's last
// second); S is one of logtally.Steps. Defaults: the last hour, by minute.
// With counter=NAME, it is a named counter's series.
func (s *Server) series(w http.ResponseWriter, r *request) error {
	src, err := s.seriesSource(r)
	if err != nil {
		return err
	}
	rs, ok := src.(recentSource)
	if !ok || r.has("from") || r.has("to") || r.has("step") && r.query.Get("step") != "1m" {
		return s.historySeries(w, r, src)
	}
	if err := r.only("step"); err != nil {
		return err
	}
	if _, err := r.single("step", "1m"); err != nil {
		return err
	}
	body, err := rs.recent()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// historySeries answers a series from src's history.
func (s *Server) historySeries(w http.ResponseWriter, r *request, src source) error {
	h, err := src.history()
	if err != nil {
		return err
	}
	if err := r.only("from", "to", "step"); err != nil {
		return err
	}
	from, to, err := s.rangeParams(r, DefaultSeriesSpan)
	if err != nil {
		return err
	}
	stepName, err := r.single("step", "1m")
	if err != nil {
		return err
	}
	step, ok := logtally.Steps[stepName]
	if !ok {
		return invalid("step must be one of 1m, 5m, 15m, 1h, 1d")
	}
	res, err := h.Series(from, to, step)
	if err != nil {
		return src.historyError(err)
	}
	writeJSON(w, http.StatusOK, seriesBody(from, to, res))
	return nil
}

// seriesBody is the body of a series answer.
func seriesBody(from, to time.Time, res logtally.Series) SeriesBody {
	body := SeriesBody{From: from.UTC(), To: to.UTC(), StepSeconds: int64(res.Step / time.Second),
		ApproximateVisitors: res.Approximate, KeptFrom: res.KeptFrom.UTC(), Points: make([]SeriesPoint, len(res.Points)),
		Damaged: res.Damaged}
	if res.KeptFrom.IsZero() {
		body.KeptFrom = time.Time{}
	}
	for i, p := range res.Points {
		st := p.Status
		held := (res.KeptFrom.IsZero() || !p.Time.Before(res.KeptFrom)) && !p.Damaged
		body.Points[i] = SeriesPoint{T: p.Time.UTC(), Held: held,
			Requests: p.Requests, PageViews: p.PageViews, Visitors: p.Visitors,
			Status: StatusClasses{st[0], st[1], st[2], st[3], st[4]}, Bytes: p.Bytes}
	}
	return body
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
	// Damaged is set when a stored count of the path could not be read,
	// the database file damaged there: today's and the total lack it.
	Damaged bool `json:"damaged,omitempty"`
}

// countPaths reads the path parameters of /api/v1/pages/count.
func countPaths(r *request) ([]string, error) {
	if err := r.only("path"); err != nil {
		return nil, err
	}
	paths := r.query["path"]
	if len(paths) == 0 || len(paths) > MaxCountPaths {
		return nil, invalid("give 1 to " + strconv.Itoa(MaxCountPaths) + " path parameters")
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") || len(p) > MaxPathLength {
			return nil, invalid("a path must start with / and be at most " + strconv.Itoa(MaxPathLength) + " bytes")
		}
	}
	return paths, nil
}

// pageCounts answers GET /api/v1/pages/count?path=A&path=B: the counter an
// article or listing shows next to each item.
func (s *Server) pageCounts(w http.ResponseWriter, r *request) error {
	src, err := s.source(r)
	if err != nil {
		return err
	}
	h, err := src.history()
	if err != nil {
		return err
	}
	paths, err := countPaths(r)
	if err != nil {
		return err
	}
	c, err := src.live()
	if err != nil {
		return err
	}
	counts, err := h.PathCounts(paths, s.deps.Now())
	if err != nil {
		return src.historyError(err)
	}
	body := CountsBody{Pages: make([]PageCounts, len(counts)), AsOf: c.asOf}
	for i, pc := range counts {
		live, _ := c.snap.PathViews(pc.Path)
		body.Pages[i] = PageCounts{Path: pc.Path, WindowPageViews: live, TodayPageViews: pc.Day, TotalPageViews: pc.Total,
			Damaged: pc.Damaged}
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// rangeParams reads from and to, by default the span before now, and
// checks that from is not after to.
func (s *Server) rangeParams(r *request, span time.Duration) (from, to time.Time, err error) {
	if to, err = s.timeParam(r, "to", s.deps.Now(), true); err != nil {
		return from, to, err
	}
	if from, err = s.timeParam(r, "from", to.Add(-span), false); err != nil {
		return from, to, err
	}
	if from.After(to) {
		return from, to, invalid("from is after to")
	}
	return from, to, nil
}

// timeParam reads a time given as RFC3339, as unix seconds, or as a date,
// which is a day in the store's zone: its first second, or with end its
// last, so that from=D&to=D is the whole of day D.
func (s *Server) timeParam(r *request, name string, def time.Time, end bool) (time.Time, error) {
	v, err := r.single(name, "")
	if err != nil || v == "" {
		return def, err
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > 1<<40 {
			return time.Time{}, invalid(name + " is out of range")
		}
		t := time.Unix(n, 0).UTC()
		return t, checkTime(name, t)
	}
	if d, err := time.ParseInLocation(time.DateOnly, v, s.deps.Zone); err == nil {
		if end {
			d = d.AddDate(0, 0, 1).Add(-time.Second)
		}
		return d, checkTime(name, d)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, invalid(name + " must be RFC3339 (2006-01-02T15:04:05Z), a date (2006-01-02) or unix seconds")
	}
	return t, checkTime(name, t)
}

// MaxPagesRange is the longest range of GET /api/v1/pages?from&to: a
// range of whole days reads every path of each day.
const MaxPagesRange = 400 * 24 * time.Hour

// PagesRange is the body of GET /api/v1/pages?from=T&to=T.
type PagesRange struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Exact is true when every count is exact (see logtally.PageRange).
	Exact bool `json:"exact"`
	// KeptFrom is present when the range begins before the kept history of
	// pages: what lies before it is not counted.
	KeptFrom time.Time            `json:"kept_from,omitzero"`
	Pages    []logtally.PageCount `json:"pages"`
	// Other is the page views of minutes' pages past the top pages each
	// minute keeps.
	Other int64 `json:"other"`
	// Damaged names the stored records the answer lacks because the
	// database file is damaged there.
	Damaged []string `json:"damaged,omitempty"`
}

// pagesRange reads the from and to of a range of pages (at most
// MaxPagesRange).
func (s *Server) pagesRange(r *request) (from, to time.Time, err error) {
	if !r.has("from") || !r.has("to") {
		return from, to, invalid("give both from and to, or neither for the live window")
	}
	if from, to, err = s.rangeParams(r, 0); err != nil {
		return from, to, err
	}
	if to.Sub(from) >= MaxPagesRange {
		return from, to, invalid("the range is longer than " + strconv.Itoa(int(MaxPagesRange/(24*time.Hour))) + " days")
	}
	return from, to, nil
}

// historyPages answers GET /api/v1/pages?from=T&to=T&limit=N from the
// stored history: the top pages of the range (see storage.Store.Pages).
func (s *Server) historyPages(w http.ResponseWriter, r *request, src source, limit int) error {
	h, err := src.history()
	if err != nil {
		return err
	}
	ph, ok := h.(PageHistory)
	if !ok {
		return notFound("no history of pages is kept")
	}
	from, to, err := s.pagesRange(r)
	if err != nil {
		return err
	}
	res, err := ph.Pages(from, to, limit)
	if err != nil {
		return src.historyError(err)
	}
	body := PagesRange{From: from.UTC(), To: to.UTC(), Exact: res.Exact, Pages: res.Pages, Other: res.Other,
		Damaged: res.Damaged}
	if !res.KeptFrom.IsZero() {
		body.KeptFrom = res.KeptFrom.UTC()
	}
	if body.Pages == nil {
		body.Pages = []logtally.PageCount{}
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
