package fleet

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// countRows are rows of a count table (minutes, hours, days, seconds), one
// array per column, as the statements unnest them.
type countRows struct {
	keys        []time.Time
	cols        [9][]int64 // requests, pageviews, bytes, rejected, status 1xx..5xx
	approximate []bool
}

// sums are the counts a delta adds to a row.
type sums [9]int64

func (c *sums) add(d *tally.Delta) {
	c[0] += d.Requests
	c[1] += d.PageViews
	c[2] += d.Bytes
	c[3] += d.Rejected
	for i, n := range d.Status {
		c[4+i] += n
	}
}

func (r *countRows) add(key time.Time, c *sums, approximate bool) {
	r.keys = append(r.keys, key)
	for i, n := range c {
		r.cols[i] = append(r.cols[i], n)
	}
	r.approximate = append(r.approximate, approximate)
}

// pairs are (bucket, visitor) rows.
type pairs struct {
	keys     []time.Time
	visitors []int64
}

// pathRows are (bucket, path, page views) rows.
type pathRows struct {
	keys  []time.Time
	paths []string
	views []int64
}

// payload is a batch turned into rows: what Apply sends.
type payload struct {
	minutes, hours, days                      countRows
	minuteVisitors, hourVisitors, dayVisitors pairs
	seconds                                   countRows
	lastSeen                                  pairs // keys: the visitor's latest second; visitors: the visitor
	secondPaths, windowMinutePaths, dayPaths  pathRows
	future                                    int64 // requests of live seconds left out: see liveSeconds
}

// bucket is an hour's or a day's share of a batch while it is gathered.
type bucket struct {
	key      time.Time
	sums     sums
	visitors []int64
	sealed   bool
}

// prepare turns b into rows, before any transaction is open. now decides
// which buckets' visitor sets may already be pruned (sealed): their
// visitors are left out and their rows marked approximate.
func (s *Store) prepare(b *tally.Batch, now time.Time) *payload {
	p := &payload{}
	names := b.Paths()
	g := &gather{loc: s.loc, sealedBefore: now.Add(-s.cfg.VisitorSpan), dayViews: map[time.Time]map[int32]int64{}}
	p.addMinutes(b, g)
	addBuckets(g.hours, &p.hours, &p.hourVisitors)
	addBuckets(g.days, &p.days, &p.dayVisitors)
	for _, day := range slices.SortedFunc(maps.Keys(g.dayViews), func(a, b time.Time) int { return a.Compare(b) }) {
		appendPathRows(&p.dayPaths, day, g.dayViews[day], names)
	}
	p.addSeconds(b, names, s.liveUntil(now))
	return p
}

// gather holds what prepare collects from a batch's minutes for the rows of
// coarser buckets: the hours and days they fall in, in time order, and the
// page views per path of each day.
type gather struct {
	loc          *time.Location
	sealedBefore time.Time // a bucket ending at or before this is sealed
	hours, days  []*bucket
	dayViews     map[time.Time]map[int32]int64 // path number -> page views
}

// hour returns the bucket of the hour that starts at hour; minutes come in
// time order, so it is the last one or a new one.
func (g *gather) hour(hour time.Time) *bucket {
	if len(g.hours) == 0 || !g.hours[len(g.hours)-1].key.Equal(hour) {
		g.hours = append(g.hours, &bucket{key: hour, sealed: !hour.Add(time.Hour).After(g.sealedBefore)})
	}
	return g.hours[len(g.hours)-1]
}

// day returns the bucket of the day, in the fleet's zone, that holds start.
func (g *gather) day(start time.Time) *bucket {
	y, m, dd := start.In(g.loc).Date()
	day := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
	if len(g.days) == 0 || !g.days[len(g.days)-1].key.Equal(day) {
		end := time.Date(y, m, dd+1, 0, 0, 0, 0, g.loc)
		g.days = append(g.days, &bucket{key: day, sealed: !end.After(g.sealedBefore)})
	}
	return g.days[len(g.days)-1]
}

// addDayViews counts page views (path numbers) in day's.
func (g *gather) addDayViews(day time.Time, views []int32) {
	dv := g.dayViews[day]
	if dv == nil {
		dv = map[int32]int64{}
		g.dayViews[day] = dv
	}
	for _, id := range views {
		dv[id]++
	}
}

// addMinutes adds the rows of b's minutes and, for those not sealed, their
// visitor sets, and gathers the minutes' hours, days and page views in g.
func (p *payload) addMinutes(b *tally.Batch, g *gather) {
	var set []int64
	for minute, d := range b.Minutes() {
		start := time.Unix(minute*60, 0).UTC()
		var c sums
		c.add(d)
		set = visitorSet(set[:0], d.Visitors)
		sealed := !start.Add(time.Minute).After(g.sealedBefore)
		p.minutes.add(start, &c, sealed && len(set) > 0)
		if !sealed {
			for _, v := range set {
				p.minuteVisitors.keys = append(p.minuteVisitors.keys, start)
				p.minuteVisitors.visitors = append(p.minuteVisitors.visitors, v)
			}
		}
		h := g.hour(start.Truncate(time.Hour))
		h.sums.add(d)
		h.visitors = append(h.visitors, set...)
		dy := g.day(start)
		dy.sums.add(d)
		dy.visitors = append(dy.visitors, set...)
		if len(d.Views) > 0 {
			g.addDayViews(dy.key, d.Views)
		}
	}
}

// addBuckets adds the rows of hours' or days' buckets and, for those not
// sealed, their visitor sets, made distinct.
func addBuckets(buckets []*bucket, rows *countRows, sets *pairs) {
	for _, k := range buckets {
		slices.Sort(k.visitors)
		k.visitors = slices.Compact(k.visitors)
		rows.add(k.key, &k.sums, k.sealed && len(k.visitors) > 0)
		if k.sealed {
			continue
		}
		for _, v := range k.visitors {
			sets.keys = append(sets.keys, k.key)
			sets.visitors = append(sets.visitors, v)
		}
	}
}

// addSeconds adds the rows of b's live seconds up to until: their counts,
// each visitor's latest second, and the page views per path of each second
// and of each minute they fall in (which whole minutes of a window read).
func (p *payload) addSeconds(b *tally.Batch, names []string, until int64) {
	last := map[int64]int64{} // visitor -> its latest second in the batch
	views := map[int32]int64{}
	minuteViews := map[int32]int64{}
	minute := int64(math.MinInt64)
	for sec, d := range liveSeconds(b.Seconds(), until, &p.future) {
		start := time.Unix(sec, 0).UTC()
		c := sums{d.Requests, d.PageViews, 0, d.Rejected}
		p.seconds.add(start, &c, false)
		for _, v := range d.Visitors {
			last[int64(v)] = sec // seconds come in time order
		}
		clear(views)
		for _, id := range d.Views {
			views[id]++
		}
		appendPathRows(&p.secondPaths, start, views, names)
		if m := logtally.FloorDiv(sec, 60); m != minute {
			if len(minuteViews) > 0 {
				appendPathRows(&p.windowMinutePaths, time.Unix(minute*60, 0).UTC(), minuteViews, names)
				clear(minuteViews)
			}
			minute = m
		}
		for id, n := range views {
			minuteViews[id] += n
		}
	}
	if len(minuteViews) > 0 {
		appendPathRows(&p.windowMinutePaths, time.Unix(minute*60, 0).UTC(), minuteViews, names)
	}
	for _, v := range slices.Sorted(maps.Keys(last)) {
		p.lastSeen.visitors = append(p.lastSeen.visitors, v)
		p.lastSeen.keys = append(p.lastSeen.keys, time.Unix(last[v], 0).UTC())
	}
}

// visitorSet appends to dst the distinct visitors of vs as signed bigints
// (how PostgreSQL stores them), sorted in their order.
func visitorSet(dst []int64, vs []uint64) []int64 {
	for _, v := range vs {
		dst = append(dst, int64(v))
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}

// appendPathRows appends one bucket's page views per path, sorted by path:
// every transaction takes the rows' locks in the same order, so two nodes
// adding to the same paths wait for each other but never deadlock.
func appendPathRows(r *pathRows, key time.Time, views map[int32]int64, names []string) {
	ids := slices.SortedFunc(maps.Keys(views), func(a, b int32) int { return cmp.Compare(names[a], names[b]) })
	for _, id := range ids {
		r.keys = append(r.keys, key)
		r.paths = append(r.paths, names[id])
		r.views = append(r.views, views[id])
	}
}
