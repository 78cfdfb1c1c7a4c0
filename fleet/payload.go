package fleet

import (
	"maps"
	"slices"
	"strings"
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

func (c *sums) addSums(o *sums) {
	for i, n := range o {
		c[i] += n
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

// payload is one site's share of one or more batches turned into rows:
// what Apply sends. Each row's key appears once, however many batches
// added to it, as an upsert may not touch a row twice.
type payload struct {
	minutes, hours, days                      countRows
	minuteVisitors, hourVisitors, dayVisitors pairs
	seconds                                   countRows
	lastSeen                                  pairs // keys: the visitor's latest second; visitors: the visitor
	secondPaths, windowMinutePaths, dayPaths  pathRows
	future                                    int64 // requests of live seconds left out: see liveSeconds
}

// bucket is a minute's, an hour's or a day's share of the batches while
// they are gathered.
type bucket struct {
	key      time.Time
	sums     sums
	visitors []int64
	sealed   bool
}

// pathViews are page views per path of the buckets of one kind, by the
// bucket's start in Unix seconds (a day's: its date at 00:00 UTC).
type pathViews map[int64]map[string]int64

// add counts views (path numbers into names) in bucket key.
func (pv pathViews) add(key int64, ids map[int32]int64, names []string) {
	m := pv[key]
	if m == nil {
		m = make(map[string]int64, len(ids))
		pv[key] = m
	}
	for id, n := range ids {
		m[names[id]] += n
	}
}

// gather collects one site's batches, in commit order, into the rows of a
// payload: it sums what several batches add to one bucket, keeps each
// visitor's latest second, and names paths by their text (each batch
// numbers its own).
type gather struct {
	loc          *time.Location
	sealedBefore time.Time // a bucket ending at or before this is sealed
	until        int64     // the last live second (liveUntil)

	minutes                            map[int64]*bucket // by Unix minute
	seconds                            map[int64]*sums   // live seconds, by Unix second
	lastSeen                           map[int64]int64   // visitor -> its latest live second
	dayPaths, secondPaths, minutePaths pathViews
	future                             int64
	sent                               *sent // members the node sent to the sets before: left out

	ids map[int32]int64 // scratch: page views per path number of one bucket
}

func newGather(loc *time.Location, sealedBefore time.Time, until int64, sent *sent) *gather {
	return &gather{loc: loc, sealedBefore: sealedBefore, until: until, sent: sent,
		minutes: map[int64]*bucket{}, seconds: map[int64]*sums{}, lastSeen: map[int64]int64{},
		dayPaths: pathViews{}, secondPaths: pathViews{}, minutePaths: pathViews{}, ids: map[int32]int64{}}
}

// prepare turns one site's batches, in commit order, into rows, before
// any transaction is open. now decides which buckets' visitor sets may
// already be pruned (sealed): their visitors are left out and their rows
// marked approximate. The members of visitor sets in sent are left out.
func (s *Store) prepare(batches []*tally.Batch, now time.Time, sent *sent) *payload {
	g := newGather(s.loc, now.Add(-s.cfg.VisitorSpan), s.liveUntil(now), sent)
	for _, b := range batches {
		g.addMinutes(b)
		g.addSeconds(b)
	}
	return g.payload()
}

// dayOf returns the key of the day, in the fleet's zone, that holds start:
// its date at 00:00 UTC, and whether the day is sealed.
func (g *gather) dayOf(start time.Time) (time.Time, bool) {
	y, m, dd := start.In(g.loc).Date()
	end := time.Date(y, m, dd+1, 0, 0, 0, 0, g.loc)
	return time.Date(y, m, dd, 0, 0, 0, 0, time.UTC), !end.After(g.sealedBefore)
}

// countIDs counts views into g.ids, emptied first.
func (g *gather) countIDs(views []int32) map[int32]int64 {
	clear(g.ids)
	for _, id := range views {
		g.ids[id]++
	}
	return g.ids
}

// addMinutes adds b's minutes: their counts, visitors and the page views
// per path of the days they fall in.
func (g *gather) addMinutes(b *tally.Batch) {
	names := b.Paths()
	for minute, d := range b.Minutes() {
		k := g.minutes[minute]
		if k == nil {
			start := time.Unix(minute*60, 0).UTC()
			k = &bucket{key: start, sealed: !start.Add(time.Minute).After(g.sealedBefore)}
			g.minutes[minute] = k
		}
		k.sums.add(d)
		for _, v := range d.Visitors {
			k.visitors = append(k.visitors, int64(v))
		}
		if len(d.Views) > 0 {
			day, _ := g.dayOf(k.key)
			g.dayPaths.add(day.Unix(), g.countIDs(d.Views), names)
		}
	}
}

// addSeconds adds b's live seconds up to g.until: their counts, each
// visitor's latest second, and the page views per path of each second and
// of each minute they fall in (which whole minutes of a window read).
func (g *gather) addSeconds(b *tally.Batch) {
	names := b.Paths()
	for sec, d := range liveSeconds(b.Seconds(), g.until, &g.future) {
		c := g.seconds[sec]
		if c == nil {
			c = &sums{}
			g.seconds[sec] = c
		}
		c.addSums(&sums{d.Requests, d.PageViews, 0, d.Rejected})
		for _, v := range d.Visitors {
			if last, ok := g.lastSeen[int64(v)]; !ok || last < sec {
				g.lastSeen[int64(v)] = sec
			}
		}
		if len(d.Views) > 0 {
			ids := g.countIDs(d.Views)
			g.secondPaths.add(sec, ids, names)
			g.minutePaths.add(logtally.FloorDiv(sec, 60)*60, ids, names)
		}
	}
}

// payload returns the rows gathered, each table's in key order.
func (g *gather) payload() *payload {
	p := &payload{future: g.future}
	var hours, days []*bucket
	for _, minute := range slices.Sorted(maps.Keys(g.minutes)) {
		k := g.minutes[minute]
		k.visitors = distinct(k.visitors)
		p.minutes.add(k.key, &k.sums, k.sealed && len(k.visitors) > 0)
		if !k.sealed {
			g.appendPairs(&p.minuteVisitors, minuteSet, k.key, k.visitors)
		}
		hour := k.key.Truncate(time.Hour)
		if len(hours) == 0 || !hours[len(hours)-1].key.Equal(hour) {
			hours = append(hours, &bucket{key: hour, sealed: !hour.Add(time.Hour).After(g.sealedBefore)})
		}
		hours[len(hours)-1].merge(k)
		day, sealed := g.dayOf(k.key)
		if len(days) == 0 || !days[len(days)-1].key.Equal(day) {
			days = append(days, &bucket{key: day, sealed: sealed})
		}
		days[len(days)-1].merge(k)
	}
	g.addBuckets(hours, hourSet, &p.hours, &p.hourVisitors)
	g.addBuckets(days, daySet, &p.days, &p.dayVisitors)
	for _, sec := range slices.Sorted(maps.Keys(g.seconds)) {
		p.seconds.add(time.Unix(sec, 0).UTC(), g.seconds[sec], false)
	}
	for _, v := range slices.Sorted(maps.Keys(g.lastSeen)) {
		p.lastSeen.visitors = append(p.lastSeen.visitors, v)
		p.lastSeen.keys = append(p.lastSeen.keys, time.Unix(g.lastSeen[v], 0).UTC())
	}
	g.secondPaths.appendRows(&p.secondPaths)
	g.minutePaths.appendRows(&p.windowMinutePaths)
	g.dayPaths.appendRows(&p.dayPaths)
	return p
}

// merge adds minute k's counts and visitors to the hour or day b.
func (b *bucket) merge(k *bucket) {
	b.sums.addSums(&k.sums)
	b.visitors = append(b.visitors, k.visitors...)
}

// addBuckets adds the rows of hours' or days' buckets and, for those not
// sealed, their visitor sets, made distinct.
func (g *gather) addBuckets(buckets []*bucket, kind setKind, rows *countRows, sets *pairs) {
	for _, k := range buckets {
		k.visitors = distinct(k.visitors)
		rows.add(k.key, &k.sums, k.sealed && len(k.visitors) > 0)
		if !k.sealed {
			g.appendPairs(sets, kind, k.key, k.visitors)
		}
	}
}

// appendPairs appends the rows of the visitors of a set, but for those
// the node sent to it before.
func (g *gather) appendPairs(sets *pairs, kind setKind, key time.Time, visitors []int64) {
	k := bucketKey{kind, key}
	for _, v := range visitors {
		if g.sent.has(k, v) {
			continue
		}
		sets.keys = append(sets.keys, key)
		sets.visitors = append(sets.visitors, v)
	}
}

// distinct sorts vs and drops repeats, in place.
func distinct(vs []int64) []int64 {
	slices.Sort(vs)
	return slices.Compact(vs)
}

// appendRows appends the page views per path of every bucket, buckets in
// time order and each bucket's paths sorted: every transaction takes the
// rows' locks in the same order, so two nodes adding to the same paths
// wait for each other but never deadlock.
func (pv pathViews) appendRows(r *pathRows) {
	for _, key := range slices.Sorted(maps.Keys(pv)) {
		views := pv[key]
		start := time.Unix(key, 0).UTC()
		for _, path := range slices.SortedFunc(maps.Keys(views), strings.Compare) {
			r.keys = append(r.keys, start)
			r.paths = append(r.paths, path)
			r.views = append(r.views, views[path])
		}
	}
}
