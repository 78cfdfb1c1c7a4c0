package ingest

import (
	"fmt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/parser"
)

// Breakdowns are counted as named counters are: each is a counter of its
// own (a site named logtally.BreakdownSite), numbered after the declared
// counters, whose key is the one the breakdown derives from the line. So
// the batches, the live windows and their restore, the store and the
// fleet count them with the counters' machinery, and a Match of a
// breakdown is a Match like another. What differs is what a line costs:
// their keys are derived on the parsing goroutines, and their batches keep
// no visitor in their minutes (tally.Batch.SetKeysOnly), for a range of a
// breakdown's history is answered from its keys' counts by day; the live
// window counts their visitors, from its seconds. A replay, which needs of
// them only a count by key and minute, has the parsers tally them so
// (tallies.go) rather than match them hit by hit.
//
// A page view, a person's visit, is broken down by every breakdown on; a
// line that is no page view only by those that count every request
// (breakdown.PerRequest: status, not-found).

// lineBreakdowns is what the parsers know of the breakdowns on.
type lineBreakdowns struct {
	deriver *breakdown.Deriver // nil: none on
	list    []breakdown.Breakdown
	first   int32 // the counter number of list[0]: the declared counters' count
	// hitByHit gives each hit its keys as matches, and a line that is no
	// page view its visitor, for the live windows' visitors per key;
	// without it the keys are tallied by minute (Config.HitByHit).
	hitByHit bool
}

// init sets the breakdowns of d (nil for none), numbered from first.
func (lb *lineBreakdowns) init(d *breakdown.Deriver, first int, hitByHit bool) {
	if d == nil || len(d.Breakdowns()) == 0 {
		return
	}
	*lb = lineBreakdowns{deriver: d, list: d.Breakdowns(), first: int32(first), hitByHit: hitByHit}
}

// tallied reports whether breakdowns are on and their keys tallied by
// minute rather than matched hit by hit (Config.HitByHit).
func (lb *lineBreakdowns) tallied() bool { return lb.deriver != nil && !lb.hitByHit }

// breakdown derives the breakdowns' keys of the last hit of r, and adds a
// Match of each. visited says that the hit has its visitor already.
func (lp *lineParser) breakdown(rec *parser.Record, r *Result, sc *Scratch, visited bool) {
	lb := &lp.breakdowns
	i := len(r.Hits) - 1
	h := &r.Hits[i]
	k := &sc.bdKeys
	if h.PageView {
		lb.deriver.Derive(rec, &sc.bdMemo, k)
	} else {
		lb.deriver.DeriveRequest(rec, k)
	}
	added := false
	for j, b := range lb.list {
		key, ok := k.Key(b)
		if !ok || lb.tallied() && r.tally(j, lb.first+int32(j), key, h) {
			continue
		}
		start := len(r.keys)
		r.keys = append(r.keys, key...)
		r.matches = append(r.matches, Match{hit: int32(i), counter: lb.first + int32(j), start: int32(start),
			end: int32(len(r.keys))})
		added = true
	}
	if added && !h.PageView && !visited && lb.hitByHit {
		h.Visitor = lp.classifier.Visitor(rec)
	}
}

// addBreakdowns adds a site of its own for each breakdown on, after the
// counters: a counter of keys only (see tally.Batch.SetKeysOnly).
func (rt *router) addBreakdowns(d *breakdown.Deriver) error {
	if d == nil {
		return nil
	}
	for _, b := range d.Breakdowns() {
		s := newSite(logtally.BreakdownSite(b.String()), len(rt.counters), true)
		if rt.newSite != nil {
			if err := rt.newSite(s); err != nil {
				return fmt.Errorf("breakdown %s: %w", b, err)
			}
		}
		rt.counters = append(rt.counters, s)
	}
	return nil
}

// BreakdownLines returns how many lines breakdown b (the i-th on)
// counted.
func (c *Core) BreakdownLines(i int) int64 {
	return c.counted[int(c.parse.breakdowns.first)+i].Load()
}
