package ingest

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/logtally/logtally"
)

// A group is a set of named counters that count some lines under the same
// key: declared apart (another method list, another status filter, another
// pattern whose captures give the same key), they still count those
// lines alike. Such a line is counted once, in the group's batch, instead
// of once in each counter's: what makes fifty counters that match every
// line cost little more than one.
//
// At each commit (Pending), a counter whose lines since the last one all
// lie in one batch is committed as that batch, under its name (as
// counters that count the same are, tally.Batch.SetAlso); one whose lines
// lie in several (its own and a group's, or two groups') has the groups'
// merged into its own batch first, once for all the counters whose lines
// lie in the same batches, which costs what counting it apart does. The
// store keeps one history for counters that have counted alike
// (storage/share_commit.go), and the live loop one window
// (ingest/live/classes.go).
type group struct {
	site    *Site   // the batch of the group's lines
	members []int32 // the counters, ascending; each counts as itself (counter.Matcher.Same)
	lines   atomic.Int64
}

// maxGroups bounds the groups a core keeps. Past it, a line of a new set
// of counters is counted in each counter's batch, as it would be alone:
// what a set of counters can be is bounded by their method lists and
// status filters, so a flood of odd requests cannot grow memory.
const maxGroups = 256

// groups are the router's groups, by their members' numbers.
type groups struct {
	byKey map[string]*group
	list  atomic.Pointer[[]*group] // for readers (Core.CounterLines); replaced when one is added
	// Pending's scratch, by counter (see classify): how many batches hold
	// its lines; which counter's batch takes them; the groups they lie
	// in; the counters whose lines ride on its batch.
	in, lead []int32
	sig      [][]byte
	riders   [][]int32
	full     bool // the warning past maxGroups was logged
	// settled is set once the batches of the next commit are settled,
	// until it is taken (ClearPending): a commit tried again must not
	// merge a group into a counter's batch twice.
	settled bool
}

// CountMatch adds ch, what a hit counts in the counters of match m
// (Result.CounterHit), to the batch of their group, or with one counter,
// to the counter's.
func (c *Core) CountMatch(m Match, ch *logtally.Hit, second bool) {
	if m.set == nil {
		c.countHit(int(m.counter), ch, second)
		return
	}
	gr := c.router.groupOf(m.set)
	if gr == nil {
		for _, k := range m.set.ids {
			c.countHit(int(k), ch, second)
		}
		return
	}
	gr.site.Batch.Add(ch, second)
	c.router.touch(gr.site)
	gr.lines.Add(1)
}

// groupOf returns the group of the counters of cs, made on first use; nil
// past maxGroups.
func (rt *router) groupOf(cs *counterSet) *group {
	if cs.group != nil {
		return cs.group
	}
	gs := &rt.groups
	if gr, ok := gs.byKey[cs.key]; ok {
		cs.group = gr
		return gr
	}
	if len(gs.byKey) >= maxGroups {
		if !gs.full {
			gs.full = true
			rt.log.Warn("more sets of named counters that count a line alike than are counted once; lines of new sets are counted by each counter apart",
				"max", maxGroups)
		}
		return nil
	}
	if gs.byKey == nil {
		gs.byKey = make(map[string]*group)
	}
	gr := &group{members: cs.ids}
	lead := rt.counters[cs.ids[0]]
	gr.site = newSite(lead.name, lead.id, true)
	gr.site.group = gr
	gs.byKey[cs.key] = gr
	var list []*group
	if old := gs.list.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, gr)
	gs.list.Store(&list)
	cs.group = gr
	return gr
}

// settleGroups decides, before a commit, under which names the touched
// groups' batches are committed: each counter whose lines are in that
// batch alone, the first one's name the batch's and the others its views
// (tally.Batch.SetAlso). A counter whose lines are in several batches has
// the groups' merged into its own, once for the counters whose lines are
// in the same ones, which ride on the first one's batch as its views. A
// group's batch that no counter takes whole is emptied and left out of
// the commit.
func (rt *router) settleGroups() {
	gs := &rt.groups
	if len(gs.byKey) == 0 || gs.settled {
		return
	}
	gs.settled = true
	touched := append([]*Site(nil), rt.touched...) // settling touches counters' sites anew
	rt.classify(touched)
	for _, s := range touched {
		s.inBatch = false
	}
	rt.touched = rt.touched[:0]
	for _, s := range touched {
		if s.group == nil || rt.settle(s) {
			rt.touch(s)
		}
	}
	for m, s := range rt.counters {
		if s.id != m || !s.inBatch {
			continue
		}
		also := s.also
		for _, r := range gs.riders[m] {
			also = append(append(also[:len(also):len(also)], rt.counters[r].name), rt.counters[r].also...)
		}
		s.Batch.SetAlso(also)
	}
}

// classify counts the batches among touched that hold each counter's
// lines (in), and of the counters whose lines lie in several groups' and
// not in their own, finds those whose lines lie in the same ones: the
// first of them (lead) takes the lines of all (riders).
func (rt *router) classify(touched []*Site) {
	gs := &rt.groups
	n := len(rt.counters)
	gs.in = append(gs.in[:0], make([]int32, n)...)
	gs.lead = append(gs.lead[:0], make([]int32, n)...)
	for len(gs.sig) < n {
		gs.sig = append(gs.sig, nil)
		gs.riders = append(gs.riders, nil)
	}
	for m, s := range rt.counters {
		gs.sig[m], gs.riders[m] = gs.sig[m][:0], gs.riders[m][:0]
		if s.inBatch && s.id == m {
			gs.in[m] = 1
		}
	}
	gi := uint32(0)
	for _, s := range touched {
		if s.group == nil {
			continue
		}
		for _, m := range s.group.members {
			gs.in[m]++
			gs.sig[m] = binary.LittleEndian.AppendUint32(gs.sig[m], gi)
		}
		gi++
	}
	first := make(map[string]int32)
	for m := range n {
		gs.lead[m] = int32(m)
		if gs.in[m] < 2 || rt.counters[m].inBatch {
			continue // in one batch, or in its own, whose lines are its alone
		}
		if f, ok := first[string(gs.sig[m])]; ok {
			gs.lead[m] = f
			gs.riders[f] = append(gs.riders[f], int32(m))
		} else {
			first[string(gs.sig[m])] = int32(m)
		}
	}
}

// settle names a touched group site's batch for the commit, merging it
// into the batches of its counters whose lines lie elsewhere too (once
// for the counters whose lines lie in the same batches), and reports
// whether any counter takes it whole.
func (rt *router) settle(s *Site) bool {
	gs := &rt.groups
	var names []string
	for _, m := range s.group.members {
		own := rt.counters[m]
		if gs.in[m] > 1 {
			if gs.lead[m] == m {
				own.Batch.Merge(s.Batch)
				rt.touch(own)
			}
			continue
		}
		if names != nil {
			names = append(names, own.name)
		} else {
			names = []string{own.name}
		}
		names = append(names, own.also...)
	}
	if names == nil {
		s.Batch.Reset()
		s.inBatch = false
		return false
	}
	s.Batch.SetSite(names[0])
	s.Batch.SetAlso(names[1:])
	return true
}

// groupLines returns how many lines counter i (one that counts as itself)
// counted in the groups it is in.
func (rt *router) groupLines(i int) int64 {
	list := rt.groups.list.Load()
	if list == nil {
		return 0
	}
	var n int64
	for _, gr := range *list {
		for _, m := range gr.members {
			if int(m) == i {
				n += gr.lines.Load()
				break
			}
		}
	}
	return n
}
