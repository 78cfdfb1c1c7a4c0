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

// errNoCounters is the 404 of the counters' endpoints without counters.
var errNoCounters = notFound("no counters are declared (logtally run --counter 'NAME=METHOD PATTERN')")

// counters answers GET /api/v1/counters.
func (s *Server) counters(w http.ResponseWriter, r *request) error {
	if s.deps.Counters == nil {
		return errNoCounters
	}
	if err := r.only(); err != nil {
		return err
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
	return nil
}

// noCounter is the 404 of a counter not declared.
func noCounter(name string) error {
	return notFound("no counter " + strconv.Quote(name) + ": GET /api/v1/counters lists them")
}

// counterOf returns the counter a request names in its path, and its live
// window.
func (s *Server) counterOf(r *request) (string, *logtally.Snapshot, error) {
	if s.deps.Counters == nil {
		return "", nil, errNoCounters
	}
	name := mux.Vars(r.Request)["name"]
	snap, ok := s.deps.Counters.CounterSnapshot(name)
	if !ok {
		return "", nil, noCounter(name)
	}
	if snap == nil {
		snap = &logtally.Snapshot{}
	}
	return name, snap, nil
}

// counterSource is what a named counter's series answers from: this
// node's counts of it, over all sites.
func (s *Server) counterSource(name string) *nodeSource {
	counters := s.deps.Counters
	return &nodeSource{part: "counter", hist: counters.CounterHistory(name),
		snapshot: func() *logtally.Snapshot { snap, _ := counters.CounterSnapshot(name); return snap }}
}

// seriesSource returns what GET /api/v1/series answers from: with
// ?counter=NAME (taken out of the query), that counter's history; without,
// the source of the site and scope it names (see Server.source).
func (s *Server) seriesSource(r *request) (source, error) {
	if !r.has("counter") {
		return s.source(r)
	}
	switch {
	case r.has("key"):
		return nil, invalid("a series per key is not kept: GET /api/v1/counters/NAME?key=K gives a key's window, today and total")
	case r.has("site") || r.has("scope"):
		return nil, invalid("counter is counted over all sites, on this node: no site or scope with it")
	case s.deps.Counters == nil:
		return nil, errNoCounters
	}
	name, _, err := r.take("counter")
	if err != nil {
		return nil, err
	}
	if _, ok := s.deps.Counters.CounterSnapshot(name); !ok {
		return nil, noCounter(name)
	}
	return s.counterSource(name), nil
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
	// Exact says that Today and Total are the key's whole counts. Past
	// --max-day-paths keys a day, and --max-paths in all, the rest are
	// counted under (other): a key not counted on a day that folded some
	// may have been folded, and once anything was folded in all, a total
	// may lack what a day folded.
	Exact bool `json:"exact"`
}

// counterKeys answers GET /api/v1/counters/NAME?key=K&key=K.
func (s *Server) counterKeys(w http.ResponseWriter, r *request) error {
	name, snap, err := s.counterOf(r)
	if err != nil {
		return err
	}
	keys, err := counterKeyParams(r)
	if err != nil {
		return err
	}
	h, err := s.counterSource(name).history()
	if err != nil {
		return err
	}
	// What the caps folded (logtally.OtherPath) tells which counts are
	// exact.
	counts, err := h.PathCounts(append(slices.Clip(keys), logtally.OtherPath), s.deps.Now())
	if err != nil {
		return err
	}
	other := counts[len(counts)-1]
	counts = counts[:len(counts)-1]
	live := make(map[string]logtally.PageCount, len(snap.Pages))
	for _, p := range snap.Pages {
		live[p.Path] = p
	}
	body := KeyCounts{Counter: name, Keys: make([]KeyCount, len(counts))}
	for i, c := range counts {
		w := live[c.Path]
		body.Keys[i] = KeyCount{Key: c.Path, Window: w.PageViews, WindowVisitors: w.Visitors, Today: c.Day, Total: c.Total,
			Exact: (other.Day == 0 || c.Day > 0) && other.Total == 0}
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// counterKeyParams reads the key parameters of /api/v1/counters/NAME.
func counterKeyParams(r *request) ([]string, error) {
	if err := r.only("key"); err != nil {
		return nil, err
	}
	keys := r.query["key"]
	if len(keys) == 0 || len(keys) > MaxCountPaths {
		return nil, invalid("give 1 to " + strconv.Itoa(MaxCountPaths) + " key parameters")
	}
	for _, k := range keys {
		if len(k) > MaxPathLength {
			return nil, invalid("a key must be at most " + strconv.Itoa(MaxPathLength) + " bytes")
		}
	}
	return keys, nil
}

// KeysBody is the body of GET /api/v1/counters/NAME/top: the top keys of
// the live window, or with from and to of a range of history.
type KeysBody struct {
	Counter       string    `json:"counter,omitempty"` // in a counter's answer
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	WindowSeconds int64     `json:"window_seconds,omitempty"`
	Exact         *bool     `json:"exact,omitempty"` // of a range: see PagesRange.Exact
	KeptFrom      time.Time `json:"kept_from,omitzero"`
	Items         []KeyItem `json:"items"`
	Other         *int64    `json:"other,omitempty"` // of a range: see PagesRange.Other
	// VisitorsApproximate, of the window, says that the keys' visitors
	// are lower bounds: the window holds more pairs of key and visitor
	// than it keeps (see window.Config.MaxPairs).
	VisitorsApproximate bool `json:"visitors_approximate,omitempty"`
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
func (s *Server) counterTop(w http.ResponseWriter, r *request) error {
	name, snap, err := s.counterOf(r)
	if err != nil {
		return err
	}
	body, err := s.keysTop(r, snap, "counter", func() History { return s.deps.Counters.CounterHistory(name) })
	if err != nil {
		return err
	}
	body.Counter = name
	writeJSON(w, http.StatusOK, body)
	return nil
}

// keysTop returns the top keys of a counter or a breakdown (what part
// names, in errors), whose live window is snap and history hist's: of the
// window, or with from and to of that range of history.
func (s *Server) keysTop(r *request, snap *logtally.Snapshot, part string, hist func() History) (KeysBody, error) {
	limit, err := pagesLimit(r, "limit", "from", "to")
	if err != nil {
		return KeysBody{}, err
	}
	body := KeysBody{Items: []KeyItem{}}
	pages, ranged, err := s.keysOf(r, snap, limit, part, hist)
	if err != nil {
		return KeysBody{}, err
	}
	if ranged == nil {
		body.From, body.To, body.WindowSeconds = snap.From, snap.To, int64(snap.Length/time.Second)
		body.VisitorsApproximate = snap.PageVisitorsApproximate
	} else {
		body.From, body.To, body.Exact, body.Other = ranged.from, ranged.to, &ranged.exact, &ranged.other
		body.KeptFrom = ranged.keptFrom
	}
	for _, p := range pages[:min(limit, len(pages))] {
		body.Items = append(body.Items, KeyItem{Key: p.Path, Count: p.PageViews, Visitors: p.Visitors})
	}
	return body, nil
}

// keyRange is what a range of history says of its keys' counts.
type keyRange struct {
	from, to, keptFrom time.Time
	exact              bool
	other              int64
}

// counterKeysOf returns a counter's keys with their counts, most counted
// first, up to limit: of the live window, or with from and to (then
// ranged is not nil) of that range of history.
func (s *Server) counterKeysOf(r *request, name string, snap *logtally.Snapshot, limit int) (
	[]logtally.PageCount, *keyRange, error) {
	return s.keysOf(r, snap, limit, "counter", func() History { return s.deps.Counters.CounterHistory(name) })
}

// keysOf is counterKeysOf of a counter or a breakdown (part) whose live
// window is snap and history hist's.
func (s *Server) keysOf(r *request, snap *logtally.Snapshot, limit int, part string, hist func() History) (
	[]logtally.PageCount, *keyRange, error) {
	if !r.has("from") && !r.has("to") {
		return snap.Pages, nil, nil
	}
	from, to, err := s.pagesRange(r)
	if err != nil {
		return nil, nil, err
	}
	h, _ := hist().(PageHistory)
	if h == nil {
		return nil, nil, notStoredYet(part)
	}
	res, err := h.Pages(from, to, limit)
	if err != nil {
		return nil, nil, err
	}
	return res.Pages, &keyRange{from: from.UTC(), to: to.UTC(), keptFrom: res.KeptFrom.UTC(), exact: res.Exact, other: res.Other}, nil
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
func (s *Server) ratioTop(w http.ResponseWriter, r *request) error {
	if s.deps.Counters == nil {
		return errNoCounters
	}
	_, rs := s.deps.Counters.Declared()
	name := mux.Vars(r.Request)["name"]
	i := slices.IndexFunc(rs, func(rt counter.Ratio) bool { return rt.Name == name })
	if i < 0 {
		return notFound("no ratio " + strconv.Quote(name) + ": GET /api/v1/counters lists them")
	}
	rt := rs[i]
	limit, err := pagesLimit(r, "limit", "min", "from", "to")
	if err != nil {
		return err
	}
	minDen := int64(1)
	if v, err := r.single("min", ""); err != nil {
		return err
	} else if v != "" {
		if minDen, err = strconv.ParseInt(v, 10, 64); err != nil || minDen < 0 {
			return invalid("min must be a whole number, 0 or more")
		}
	}
	counts, exact, err := s.ratioCounts(r, rt)
	if err != nil {
		return err
	}
	items := make([]counter.Item, 0, len(counts[1]))
	for key, den := range counts[1] {
		items = append(items, counter.Item{Key: key, Numerator: counts[0][key], Denominator: den})
	}
	body := RatiosBody{Ratio: rt.Name, Numerator: rt.Numerator, Denominator: rt.Denominator, Min: minDen,
		Items: counter.Rank(items, minDen, limit)}
	if r.has("from") {
		body.Exact = &exact
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// ratioCounts returns the counts of each key of a ratio's numerator and
// denominator, of the live window or of the range the request names, and
// whether both are exact.
func (s *Server) ratioCounts(r *request, rt counter.Ratio) (counts [2]map[string]int64, exact bool, err error) {
	exact = true
	for j, c := range []string{rt.Numerator, rt.Denominator} {
		snap, ok := s.deps.Counters.CounterSnapshot(c)
		if !ok {
			return counts, false, errors.New("ratio " + rt.Name + ": no counter " + c)
		}
		if snap == nil {
			snap = &logtally.Snapshot{}
		}
		pages, ranged, err := s.counterKeysOf(r, c, snap, MaxRatioKeys)
		if err != nil {
			return counts, false, err
		}
		if ranged != nil && !ranged.exact {
			exact = false
		}
		counts[j] = make(map[string]int64, len(pages))
		for _, p := range pages {
			counts[j][p.Path] = p.PageViews
		}
	}
	return counts, exact, nil
}
