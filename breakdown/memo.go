package breakdown

import (
	"math"
	"time"
)

// Memo is what one goroutine remembers of the lines it has seen, so that
// a line like those before costs a lookup or a compare: the agents and
// client networks seen lately (at most 4,096 of each, about 2.5 MiB at
// worst: see agentCache, netCache) and the referrer of the line before. Its
// zero value is ready; its tables are made on first use. A Memo serves one
// goroutine at a time, and one Deriver: given to another, it starts
// afresh.
type Memo struct {
	owner  *Deriver
	agents agentCache
	nets   netCache
	ref    refMemo
	zone   zoneMemo
}

// zoneMemo remembers the offset of the zone's period that the line before
// fell in, and that period's bounds: a zone changes its offset a few
// times a year, and asking time for it costs a search of the zone's
// transitions every line.
type zoneMemo struct {
	ok       bool
	from, to int64 // the period, unix seconds [from, to)
	off      int64 // its offset east of UTC, seconds
}

// offset returns the offset of loc at t.
func (z *zoneMemo) offset(t time.Time, loc *time.Location) int64 {
	sec := t.Unix()
	if z.ok && z.from <= sec && sec < z.to {
		return z.off
	}
	lt := t.In(loc)
	_, off := lt.Zone()
	start, end := lt.ZoneBounds()
	*z = zoneMemo{ok: true, from: math.MinInt64, to: math.MaxInt64, off: int64(off)}
	if !start.IsZero() {
		z.from = start.Unix()
	}
	if !end.IsZero() {
		z.to = end.Unix()
	}
	return z.off
}

// refMemoMax is the longest Referer that a refMemo remembers: a longer one
// is read again on the next line.
const refMemoMax = 1024

// refMemo remembers the Referer and virtual host of the line before, and
// what they gave: the assets of a page come one after another, each with
// the page as its referrer, so six lines in ten of a small site's log have
// the Referer of the line before, which then costs a compare.
type refMemo struct {
	ok         bool // ref and vhost are the line before's
	ref, vhost []byte
	key        []byte // its Referrer key
	channel    string
}

// same reports whether ref and vhost are those of the line before.
func (m *refMemo) same(ref, vhost []byte) bool {
	return m.ok && string(m.ref) == string(ref) && string(m.vhost) == string(vhost)
}

// set remembers what ref and vhost gave. key may alias m.key.
func (m *refMemo) set(ref, vhost, key []byte, channel string) {
	m.key, m.channel = key, channel
	m.ok = len(ref) <= refMemoMax && len(vhost) <= MaxHost
	if m.ok {
		m.ref = append(m.ref[:0], ref...)
		m.vhost = append(m.vhost[:0], vhost...)
	}
}
