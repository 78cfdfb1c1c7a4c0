package ingest

import (
	"fmt"
	"sync"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// Replay's apply step, sharded. Parsing runs on every core; applying the
// hits to the batches is the part that must see every line in order, and
// on one goroutine it caps a replay at what one core applies (about 13M
// lines/s, 75 ns a line, nearly all of it numbering the line's path).
// With shards, the goroutine that puts results in order (the coordinator)
// keeps only what is per chunk (lines read, rejected lines, positions, the
// site of each hit), and hands each result to every shard; shard k adds
// the hits whose visitor falls in its k-th of the hash range, to batches
// of its own. A commit merges each site's batches, the coordinator's and
// every shard's, into one (tally.Batch.Merge) and commits it with the
// positions, so exactly-once holds as before: one transaction carries
// every shard's part of every line before the positions it stores.
//
// Visitors are sharded by hash rather than lines by chunk so that a
// shard's batches hold every page view of their visitors: a minute's
// visitor sets are disjoint across shards, and counted visitors of a named
// counter (whose key and visitor go together) stay whole. Hits without a
// visitor (not page views) add to counts alone and go round-robin.

// shards are Replay's apply workers and what they exchange with the
// coordinator and the committer.
type shards struct {
	n  int
	in []chan shardMsg
	// cuts[k] carries shard k's filled batches, one send per cut; free[k]
	// gives them back emptied once merged.
	cuts, free []chan shardParts
	wg         sync.WaitGroup
}

// shardMsg is a parsed result for a shard to apply, or with cut set, the
// end of a batch: the shard hands its batches over and starts new ones.
type shardMsg struct {
	r    *result
	list []*siteState // the sites by id when r was resolved; only names are read
	cut  bool
}

// shardParts are one shard's batches: a site's by its id (siteState.id),
// a counter's by its index; nil where the shard saw none of its lines.
type shardParts struct {
	sites, counters []*tally.Batch
}

// shardOf returns the shard of hit i of a result: by visitor when it has
// one, so that a visitor's page views stay together, else by index.
func shardOf(h *logtally.Hit, i, n int) int {
	if h.Visitor != 0 {
		return int((h.Visitor >> 32) * uint64(n) >> 32)
	}
	return i % n
}

// startShards starts n apply workers.
func (p *Pipeline) startShards(n int) *shards {
	ss := &shards{n: n, in: make([]chan shardMsg, n), cuts: make([]chan shardParts, n), free: make([]chan shardParts, n)}
	for k := range n {
		ss.in[k] = make(chan shardMsg, 8)
		ss.cuts[k], ss.free[k] = make(chan shardParts, 1), make(chan shardParts, 1)
		ss.free[k] <- shardParts{}
		ss.wg.Go(func() {
			var cur shardParts
			for m := range ss.in[k] {
				if m.cut {
					// The set handed over comes back once merged, before
					// the next cut needs it.
					ss.cuts[k] <- cur
					cur = <-ss.free[k]
					continue
				}
				p.applyShard(&cur, k, n, m.r, m.list)
				if m.r.refs.Add(-1) == 0 {
					p.pool.Put(m.r)
				}
			}
		})
	}
	return ss
}

// stop ends the workers once they have applied what they were given.
func (ss *shards) stop() {
	for _, in := range ss.in {
		close(in)
	}
	ss.wg.Wait()
}

// dispatch hands a result, resolved and applied by the coordinator, to
// every shard; the last one done with it puts it back in the pool.
func (p *Pipeline) dispatch(r *result) {
	r.refs.Store(int32(p.shards.n))
	for _, in := range p.shards.in {
		in <- shardMsg{r: r, list: p.list}
	}
}

// cut asks every shard for its batches: what it applied of the results
// dispatched so far.
func (ss *shards) cut() {
	for _, in := range ss.in {
		in <- shardMsg{cut: true}
	}
}

// merge gathers every shard's batches at a cut and merges them into the
// batches handed off with it, sites by id and counters by index, then
// empties them and gives them back for the shard's next cut. The merges
// of successive cuts go one after the other. A shard's lines of a site the
// coordinator did not hand off would be lost: an error, never the case.
func (ss *shards) merge(sites, counters []*tally.Batch) error {
	var err error
	into := func(to []*tally.Batch, from []*tally.Batch) {
		for id, b := range from {
			if b == nil || b.Empty() {
				continue
			}
			if id >= len(to) || to[id] == nil {
				err = fmt.Errorf("ingest: a shard holds lines of %s, which the commit does not", b.Site())
			} else {
				to[id].Merge(b)
			}
			b.Reset()
		}
	}
	for k := range ss.n {
		parts := <-ss.cuts[k]
		into(sites, parts.sites)
		into(counters, parts.counters)
		ss.free[k] <- parts
	}
	return err
}

// applyShard adds the hits of r that are shard k's (of n) to its batches:
// every line to all's, each to its site's and to the counters it counts.
// Replay keeps no window, so a hit always counts.
func (p *Pipeline) applyShard(sh *shardParts, k, n int, r *result, list []*siteState) {
	all := batchOf(&sh.sites, p.all.id, list)
	second := p.cfg.PersistWindow
	mi := 0 // r.matches[mi:] are of hit i and after
	for i := range r.hits {
		h := &r.hits[i]
		first := mi
		mi = r.matchesEnd(i, mi)
		if shardOf(h, i, n) != k {
			continue
		}
		all.Add(h, second)
		for _, m := range r.matches[first:mi] {
			ch := logtally.Hit{Time: h.Time, Visitor: h.Visitor, Path: r.keys[m.start:m.end], Bytes: h.Bytes,
				Status: h.Status, PageView: true}
			batchOf(&sh.counters, int(m.counter), p.counters).Add(&ch, second)
		}
		id := r.siteID
		if p.multi && r.site == nil {
			id = r.siteIDs[i]
		}
		if id >= 0 && id != int32(p.all.id) {
			batchOf(&sh.sites, int(id), list).Add(h, second)
		}
	}
}

// batchOf returns the batch at id in bs, made for the site list[id] names
// if there is none yet.
func batchOf(bs *[]*tally.Batch, id int, list []*siteState) *tally.Batch {
	if id >= len(*bs) {
		*bs = append(*bs, make([]*tally.Batch, id+1-len(*bs))...)
	}
	b := (*bs)[id]
	if b == nil {
		b = tally.NewSiteBatch(list[id].name)
		(*bs)[id] = b
	}
	return b
}

// resolve does the coordinator's part of a result when shards apply its
// hits: it finds the site of the chunk or of each hit (adding sites in
// line order, as apply does, so that MaxSites keeps the same ones), marks
// what the commit must carry, and counts the lines, rejected lines and
// position as apply does.
func (p *Pipeline) resolve(r *result) {
	r.siteID, r.siteIDs = -1, r.siteIDs[:0]
	var site *siteState // the chunk's, when lines do not name their own
	if p.multi && r.site != nil {
		site = p.siteOf(r.site)
		r.siteID = int32(site.id)
	}
	for i := range r.hits {
		s := site
		if p.multi && s == nil {
			s = p.siteOf(r.host(i))
			r.siteIDs = append(r.siteIDs, int32(s.id))
		}
		if s != nil && s != p.all {
			p.touch(s)
			if s.name == logtally.OtherSite {
				p.otherLines.Add(1)
			}
			if s != site {
				s.batch.Saw(r.hits[i].Time) // a file's lines of it may be rejected later
			}
		}
	}
	for _, m := range r.matches {
		p.touch(p.counters[m.counter])
		p.countedLines[m.counter].Add(1)
	}
	// A rejected line counts in the minute of the newest line before it:
	// the shards hold those lines, so the batches it goes to are told.
	p.all.batch.Saw(r.newest)
	if site != nil {
		site.batch.Saw(r.newest)
	}
	p.applyRest(r, site, int64(len(r.hits)))
}
