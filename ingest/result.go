package ingest

import (
	"encoding/binary"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/tailer"
)

// Result is what one chunk's lines amount to, parsed (Parse), then routed
// (Route): its hits, each with its site and the named counters it counts,
// and its rejected lines. Applying it is then cheap, and stays on one
// goroutine. A Result is reused from chunk to chunk.
type Result struct {
	Now  time.Time      // the clock when the chunk was parsed
	Hits []logtally.Hit // the lines that parsed; Path aliases the chunk's data, or paths

	file         string
	offset, size int64 // the position after the chunk; bytes of its lines
	lines        int64
	rejected     []int64        // by index in rejectReasons
	samples      []rejectedLine // the chunk's last rejected lines, at most MaxSamples
	siteName     []byte         // with several sites: the chunk's, or nil when lines name their own ...
	hosts        hosts          // ... each hit's, then
	route        routing        // where the hits go: set by Route
	paths        []byte         // the paths not in the chunk's data (parser.Record.PathCopied), end to end
	matching                    // the named counters the hits count
	numbering                   // the page views' paths, each once
	chunk        tailer.Chunk   // whose data the hits alias, until Release
}

// matching is what a Result holds of the named counters its hits count.
type matching struct {
	matches []Match         // in hit order
	keys    []byte          // the matches' keys, end to end
	scratch []counter.Match // the matcher's
	setKey  []byte          // the counters of a key, as counterSet.key
	sets    map[string]*counterSet
	tallies keyTallies // a replay's breakdown keys, by minute (see tallies.go)
}

// Match is a key a hit is counted under by one named counter, or by a set
// of them that count it alike.
type Match struct {
	hit, counter, start, end int32 // counter: the first of set
	set                      *counterSet
}

// Counter returns the index of the counter matched, in declaration order:
// with several (Counters), the first.
func (m Match) Counter() int { return int(m.counter) }

// Counters returns the counters that count the hit under the match's key
// when there are several, in declaration order; nil when Counter alone
// does.
func (m Match) Counters() []int32 {
	if m.set == nil {
		return nil
	}
	return m.set.ids
}

// A counterSet is a set of named counters that count a line under the
// same key. A Result makes each once (counterSet) and keeps it while it is
// reused, so that a line costs a map lookup; the router finds the group of
// a set once (group).
type counterSet struct {
	key   string  // the counters' numbers, 4 bytes each, little-endian
	ids   []int32 // the same, ascending
	group *group  // the router's, once it was asked; only the router touches it
}

// maxCounterSets bounds the sets a Result keeps: past it they are made
// anew.
const maxCounterSets = 1024

// counterSet returns the set of the counters in setKey, nil for one.
func (r *Result) counterSet() *counterSet {
	if len(r.setKey) == 4 {
		return nil
	}
	if cs, ok := r.sets[string(r.setKey)]; ok {
		return cs
	}
	if r.sets == nil || len(r.sets) >= maxCounterSets {
		r.sets = make(map[string]*counterSet)
	}
	cs := &counterSet{key: string(r.setKey)}
	for k := 0; k < len(r.setKey); k += 4 {
		cs.ids = append(cs.ids, int32(binary.LittleEndian.Uint32(r.setKey[k:])))
	}
	r.sets[cs.key] = cs
	return cs
}

// rejectedLine is a rejected line of a chunk; line aliases the chunk's data.
type rejectedLine struct {
	line []byte
	err  error
}

// reset empties r for the lines of ch, parsed at now.
func (r *Result) reset(ch tailer.Chunk, now time.Time) {
	if r.rejected == nil {
		r.rejected = make([]int64, len(rejectReasons))
	}
	clear(r.rejected)
	r.Now = now
	r.file, r.offset, r.size = ch.File, ch.Offset, int64(len(ch.Data))
	r.chunk = ch
	r.Hits, r.samples = r.Hits[:0], r.samples[:0]
	r.siteName = nil
	r.hosts.reset()
	r.matches, r.keys, r.paths = r.matches[:0], r.keys[:0], r.paths[:0]
	r.numbering.reset()
	r.route.reset()
}

// Release gives the buffer of the chunk r was parsed from back to its
// reader (tailer.Chunk.Release), once r was applied: r's hits, and what
// else of r aliases the chunk, must not be read after.
func (r *Result) Release() {
	r.chunk.Release()
	r.chunk = tailer.Chunk{}
}

// keepPath returns a copy of path that lasts as long as r's hits: a path
// the parser decoded or escaped lies in its Record, which the next line
// reuses. A copy made earlier stays valid when paths grows, in its old
// array.
func (r *Result) keepPath(path []byte) []byte {
	start := len(r.paths)
	r.paths = append(r.paths, path...)
	return r.paths[start:len(r.paths):len(r.paths)]
}

// reject counts a rejected line, and keeps it among the chunk's last
// MaxSamples.
func (r *Result) reject(line []byte, err error) {
	r.rejected[reasonIndex(err)]++
	if len(r.samples) == MaxSamples {
		copy(r.samples, r.samples[1:])
		r.samples = r.samples[:MaxSamples-1]
	}
	r.samples = append(r.samples, rejectedLine{line, err})
}

// hosts are the sites of a chunk's hits when lines name their own: hit
// i's is names[end[i-1]:end[i]].
type hosts struct {
	names []byte
	end   []int32
}

func (h *hosts) reset() { h.names, h.end = h.names[:0], h.end[:0] }

// add appends the site of the next hit, given its host.
func (h *hosts) add(host []byte) {
	h.names = logtally.NormalizeSite(h.names, host)
	h.end = append(h.end, int32(len(h.names)))
}

// at returns the site of hit i.
func (h *hosts) at(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = h.end[i-1]
	}
	return h.names[start:h.end[i]]
}

// MatchesEnd returns the end of hit i's matches in Matches, which start
// at mi: the end of hit i-1's.
func (r *Result) MatchesEnd(i, mi int) int {
	for mi < len(r.matches) && int(r.matches[mi].hit) == i {
		mi++
	}
	return mi
}

// Matches returns the matches from index from to index to (see
// MatchesEnd).
func (r *Result) Matches(from, to int) []Match { return r.matches[from:to] }

// CounterHit returns what hit h counts in the counter of match m: a page
// view of the counter's key.
func (r *Result) CounterHit(h *logtally.Hit, m Match) logtally.Hit {
	return logtally.Hit{Time: h.Time, Visitor: h.Visitor, Path: r.keys[m.start:m.end], Bytes: h.Bytes, Status: h.Status,
		PageView: true}
}

// Site returns the site hit i goes to besides the all-sites view: nil with
// one site, or when it is the all-sites view itself.
func (r *Result) Site(i int) *Site {
	if r.route.perHit {
		return r.route.sites[i]
	}
	return r.route.site
}

// FileSite returns the site the chunk's file is mapped to (--site), where
// its rejected lines count besides the all-sites view: a line that did not
// parse names no site. Nil when the file has none.
func (r *Result) FileSite() *Site { return r.route.fileSite }

// RejectedLines returns how many of the chunk's lines were rejected.
func (r *Result) RejectedLines() int64 {
	var n int64
	for _, k := range r.rejected {
		n += k
	}
	return n
}
