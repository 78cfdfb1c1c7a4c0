package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
)

// Counters is what the API reads of the named counters (see package
// counter). Each counter is counted as a site of its own whose paths are
// the counter's keys: its live window's Requests are the lines it counted,
// Visitors their distinct visitors, and Pages its keys with their counts;
// its history's Series, PathCounts and Pages are the counter's per minute,
// hour and day, per key per day and in all, and its top keys of a range.
type Counters interface {
	// Declared returns the declared counters and ratios, in declaration
	// order.
	Declared() ([]counter.Counter, []counter.Ratio)
	// CounterSnapshot returns a counter's live window, and false for an
	// undeclared name. Its Pages hold every key the window counts (up to
	// --max-counter-keys), most counted first, the key in Path. It must
	// not block.
	CounterSnapshot(name string) (*logtally.Snapshot, bool)
	// CounterHistory returns a counter's stored history, nil before its
	// first lines are committed. It implements PageHistory.
	CounterHistory(name string) History
}

// MaxRatioKeys is the most keys of a range GET /api/v1/ratios/NAME/top
// reads from history: the default --max-counter-keys.
const MaxRatioKeys = 100_000

// CountersBody is the body of GET /api/v1/counters.
type CountersBody struct {
	Counters []CounterBody `json:"counters"`
	Ratios   []RatioBody   `json:"ratios"`
}

// CounterBody is one declared counter and its live window.
type CounterBody struct {
	Name     string        `json:"name"`
	Methods  []string      `json:"methods"` // empty: any method
	Pattern  string        `json:"pattern"`
	Status   string        `json:"status"` // the status filter as declared; "" for any
	Captures []string      `json:"captures"`
	Window   CounterWindow `json:"window"`
}

// CounterWindow is a counter's live window: the lines it counted, their
// distinct visitors, and how many keys.
type CounterWindow struct {
	Count    int64 `json:"count"`
	Visitors int64 `json:"visitors"`
	Keys     int   `json:"keys"`
}

// RatioBody is one declared ratio and its window's totals.
type RatioBody struct {
	Name        string      `json:"name"`
	Numerator   string      `json:"numerator"`
	Denominator string      `json:"denominator"`
	Window      RatioWindow `json:"window"`
}

// RatioWindow is a ratio of the live window's totals; Ratio is 0 when the
// denominator is.
type RatioWindow struct {
	Numerator   int64   `json:"numerator"`
	Denominator int64   `json:"denominator"`
	Ratio       float64 `json:"ratio"`
}

const errNoCounters = "no counters are declared (logtally run --counter 'NAME=METHOD PATTERN')"

// counters answers GET /api/v1/counters.
func (s *Server) counters(w http.ResponseWriter, r *http.Request) {
	if s.deps.Counters == nil {
		writeError(w, http.StatusNotFound, errNoCounters)
		return
	}
	if err := onlyParams(r, nil); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cs, rs := s.deps.Counters.Declared()
	body := CountersBody{Counters: []CounterBody{}, Ratios: []RatioBody{}}
	totals := map[string]int64{}
	for _, c := range cs {
		cb := CounterBody{Name: c.Name, Methods: c.Methods, Pattern: c.Pattern, Status: c.Status, Captures: c.Captures}
		if cb.Methods == nil {
			cb.Methods = []string{}
		}
		if cb.Captures == nil {
			cb.Captures = []string{}
		}
		if snap, ok := s.deps.Counters.CounterSnapshot(c.Name); ok && snap != nil {
			cb.Window = CounterWindow{Count: snap.Requests, Visitors: snap.Visitors, Keys: len(snap.Pages)}
		}
		totals[c.Name] = cb.Window.Count
		body.Counters = append(body.Counters, cb)
	}
	for _, rt := range rs {
		rw := RatioWindow{Numerator: totals[rt.Numerator], Denominator: totals[rt.Denominator]}
		if rw.Denominator > 0 {
			rw.Ratio = float64(rw.Numerator) / float64(rw.Denominator)
		}
		body.Ratios = append(body.Ratios, RatioBody{Name: rt.Name, Numerator: rt.Numerator, Denominator: rt.Denominator, Window: rw})
	}
	writeJSON(w, http.StatusOK, body)
}

// counterOf returns the counter a request names in its path, and false
// after answering 404 for one not declared.
func (s *Server) counterOf(w http.ResponseWriter, r *http.Request) (string, *logtally.Snapshot, bool) {
	if s.deps.Counters == nil {
		writeError(w, http.StatusNotFound, errNoCounters)
		return "", nil, false
	}
	name := mux.Vars(r)["name"]
	snap, ok := s.deps.Counters.CounterSnapshot(name)
	if !ok {
		writeError(w, http.StatusNotFound, "no counter "+strconv.Quote(name)+": GET /api/v1/counters lists them")
		return "", nil, false
	}
	if snap == nil {
		snap = &logtally.Snapshot{}
	}
	return name, snap, true
}

// KeyCounts is the body of GET /api/v1/counters/NAME?key=K.
type KeyCounts struct {
	Counter string     `json:"counter"`
	Keys    []KeyCount `json:"keys"`
}

// KeyCount is one key's counts: in the live window, today (in the
// store's zone) and in all.
type KeyCount struct {
	Key    string `json:"key"`
	Window int64  `json:"window"`
	Today  int64  `json:"today"`
	Total  int64  `json:"total"`
	// WindowVisitors is the key's distinct visitors in the live window.
	WindowVisitors int64 `json:"window_visitors"`
}

// counterKeys answers GET /api/v1/counters/NAME?key=K&key=K.
func (s *Server) counterKeys(w http.ResponseWriter, r *http.Request) {
	name, snap, ok := s.counterOf(w, r)
	if !ok {
		return
	}
	if err := onlyParams(r, []string{"key"}); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	keys := r.URL.Query()["key"]
	if len(keys) == 0 || len(keys) > MaxCountPaths {
		writeError(w, http.StatusBadRequest, "give 1 to "+strconv.Itoa(MaxCountPaths)+" key parameters")
		return
	}
	for _, k := range keys {
		if len(k) > MaxPathLength {
			writeError(w, http.StatusBadRequest, "a key must be at most "+strconv.Itoa(MaxPathLength)+" bytes")
			return
		}
	}
	h := s.deps.Counters.CounterHistory(name)
	if h == nil {
		notStoredYet(w, "counter")
		return
	}
	counts, err := h.PathCounts(keys, s.deps.Now())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	live := make(map[string]logtally.PageCount, len(snap.Pages))
	for _, p := range snap.Pages {
		live[p.Path] = p
	}
	body := KeyCounts{Counter: name, Keys: make([]KeyCount, len(counts))}
	for i, c := range counts {
		w := live[c.Path]
		body.Keys[i] = KeyCount{Key: c.Path, Window: w.PageViews, WindowVisitors: w.Visitors, Today: c.Day, Total: c.Total}
	}
	writeJSON(w, http.StatusOK, body)
}

// KeysBody is the body of GET /api/v1/counters/NAME/top: the top keys of
// the live window, or with from and to of a range of history.
type KeysBody struct {
	Counter       string    `json:"counter"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	WindowSeconds int64     `json:"window_seconds,omitempty"`
	Exact         *bool     `json:"exact,omitempty"` // of a range: see PagesRange.Exact
	KeptFrom      time.Time `json:"kept_from,omitzero"`
	Items         []KeyItem `json:"items"`
	Other         *int64    `json:"other,omitempty"` // of a range: see PagesRange.Other
}

// KeyItem is one key and its count.
type KeyItem struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
	// Visitors is the key's distinct visitors, in the live window's
	// answer only.
	Visitors int64 `json:"visitors,omitempty"`
}

// counterTop answers GET /api/v1/counters/NAME/top?limit=N[&from&to].
func (s *Server) counterTop(w http.ResponseWriter, r *http.Request) {
	name, snap, ok := s.counterOf(w, r)
	if !ok {
		return
	}
	limit, err := pagesLimit(r, "limit", "from", "to")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	body := KeysBody{Counter: name, Items: []KeyItem{}}
	pages, ranged, ok := s.counterKeysOf(w, r, name, snap, limit)
	if !ok {
		return
	}
	if ranged == nil {
		body.From, body.To, body.WindowSeconds = snap.From, snap.To, int64(snap.Length/time.Second)
	} else {
		body.From, body.To, body.Exact, body.Other = ranged.from, ranged.to, &ranged.exact, &ranged.other
		body.KeptFrom = ranged.keptFrom
	}
	for _, p := range pages[:min(limit, len(pages))] {
		body.Items = append(body.Items, KeyItem{Key: p.Path, Count: p.PageViews, Visitors: p.Visitors})
	}
	writeJSON(w, http.StatusOK, body)
}

// keyRange is what a range of history says of its keys' counts.
type keyRange struct {
	from, to, keptFrom time.Time
	exact              bool
	other              int64
}

// counterKeysOf returns a counter's keys with their counts, most counted
// first, up to limit: of the live window, or with from and to (then
// ranged is not nil) of that range of history. It answers the request
// itself when it returns false.
func (s *Server) counterKeysOf(w http.ResponseWriter, r *http.Request, name string, snap *logtally.Snapshot, limit int) (
	[]logtally.PageCount, *keyRange, bool) {
	if q := r.URL.Query(); !q.Has("from") && !q.Has("to") {
		return snap.Pages, nil, true
	}
	from, to, ok := s.pagesRange(w, r)
	if !ok {
		return nil, nil, false
	}
	h, _ := s.deps.Counters.CounterHistory(name).(PageHistory)
	if h == nil {
		notStoredYet(w, "counter")
		return nil, nil, false
	}
	res, err := h.Pages(from, to, limit)
	if err != nil {
		s.internal(w, r, err)
		return nil, nil, false
	}
	return res.Pages, &keyRange{from: from.UTC(), to: to.UTC(), keptFrom: res.KeptFrom.UTC(), exact: res.Exact, other: res.Other}, true
}

// RatiosBody is the body of GET /api/v1/ratios/NAME/top.
type RatiosBody struct {
	Ratio       string         `json:"ratio"`
	Numerator   string         `json:"numerator"`
	Denominator string         `json:"denominator"`
	Min         int64          `json:"min"`
	Exact       *bool          `json:"exact,omitempty"` // of a range: both counters' keys exact
	Items       []counter.Item `json:"items"`
}

// ratioTop answers GET /api/v1/ratios/NAME/top?limit=N&min=D[&from&to]:
// the keys by ratio of the numerator's count to the denominator's, those
// with a denominator of at least min, largest first, then by
// denominator, largest first, then by key.
func (s *Server) ratioTop(w http.ResponseWriter, r *http.Request) {
	if s.deps.Counters == nil {
		writeError(w, http.StatusNotFound, errNoCounters)
		return
	}
	_, rs := s.deps.Counters.Declared()
	name := mux.Vars(r)["name"]
	i := slices.IndexFunc(rs, func(rt counter.Ratio) bool { return rt.Name == name })
	if i < 0 {
		writeError(w, http.StatusNotFound, "no ratio "+strconv.Quote(name)+": GET /api/v1/counters lists them")
		return
	}
	rt := rs[i]
	limit, err := pagesLimit(r, "limit", "min", "from", "to")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	minDen := int64(1)
	if v, err := single(r, "min", ""); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	} else if v != "" {
		if minDen, err = strconv.ParseInt(v, 10, 64); err != nil || minDen < 0 {
			writeError(w, http.StatusBadRequest, "min must be a whole number, 0 or more")
			return
		}
	}
	counts := [2]map[string]int64{}
	exact := true
	for j, c := range []string{rt.Numerator, rt.Denominator} {
		snap, ok := s.deps.Counters.CounterSnapshot(c)
		if !ok {
			s.internal(w, r, errors.New("ratio "+rt.Name+": no counter "+c))
			return
		}
		if snap == nil {
			snap = &logtally.Snapshot{}
		}
		pages, ranged, ok := s.counterKeysOf(w, r, c, snap, MaxRatioKeys)
		if !ok {
			return
		}
		if ranged != nil && !ranged.exact {
			exact = false
		}
		counts[j] = make(map[string]int64, len(pages))
		for _, p := range pages {
			counts[j][p.Path] = p.PageViews
		}
	}
	items := make([]counter.Item, 0, len(counts[1]))
	for key, den := range counts[1] {
		items = append(items, counter.Item{Key: key, Numerator: counts[0][key], Denominator: den})
	}
	body := RatiosBody{Ratio: rt.Name, Numerator: rt.Numerator, Denominator: rt.Denominator, Min: minDen,
		Items: counter.Rank(items, minDen, limit)}
	if q := r.URL.Query(); q.Has("from") {
		body.Exact = &exact
	}
	writeJSON(w, http.StatusOK, body)
}

// countered routes GET /api/v1/series?counter=NAME to the series of that
// counter's history, the parameter taken off, and one without it to
// next.
func (s *Server) countered(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" || !r.URL.Query().Has("counter") {
			next(w, r)
			return
		}
		q := r.URL.Query()
		if q.Has("key") {
			writeError(w, http.StatusBadRequest, "a series per key is not kept: GET /api/v1/counters/NAME?key=K gives a key's window, today and total")
			return
		}
		if q.Has("site") || q.Has("scope") {
			writeError(w, http.StatusBadRequest, "counter is counted over all sites, on this node: no site or scope with it")
			return
		}
		if s.deps.Counters == nil {
			writeError(w, http.StatusNotFound, errNoCounters)
			return
		}
		name, err := single(r, "counter", "")
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if _, ok := s.deps.Counters.CounterSnapshot(name); !ok {
			writeError(w, http.StatusNotFound, "no counter "+strconv.Quote(name)+": GET /api/v1/counters lists them")
			return
		}
		q.Del("counter")
		r.URL.RawQuery = q.Encode()
		counters := s.deps.Counters
		s.partServer("counter", func() *logtally.Snapshot { snap, _ := counters.CounterSnapshot(name); return snap },
			counters.CounterHistory(name)).series(w, r)
	}
}
