package ingest

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/tally"
	"github.com/logtally/logtally/window"
)

// Replay consumes chunks like Run, but parses them on every core: workers
// turn chunks into compact arrays of hits, and this goroutine applies them
// in the order the chunks came in, so a position is only committed once
// every line before it, in every file, has been counted. A failed commit
// ends Replay with the error.
//
// Nothing is committed before the verdict on the first lines (see judge):
// when most of them are rejected, Replay returns a *FormatError and
// commits nothing, so that a replay with the right format reads them all.
func (p *Pipeline) Replay(ctx context.Context, in <-chan tailer.Chunk) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := max(1, runtime.GOMAXPROCS(0))
	type job struct {
		seq int
		c   tailer.Chunk
	}
	jobs := make(chan job, workers)
	results := make(chan *result, 2*workers)
	go func() {
		defer close(jobs)
		for seq := 0; ; seq++ {
			select {
			case c, ok := <-in:
				if !ok {
					return
				}
				select {
				case jobs <- job{seq, c}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var sc scratch
			for j := range jobs {
				r, _ := p.pool.Get().(*result)
				if r == nil {
					r = new(result)
				}
				p.parse(j.c, &sc, r)
				r.seq = j.seq
				select {
				case results <- r:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()

	if n := p.applyShards(workers); n > 0 {
		p.shards = p.startShards(n)
		defer func() {
			p.shards.stop()
			p.shards = nil
		}()
	}

	flush := time.NewTicker(p.cfg.FlushInterval)
	defer flush.Stop()
	pending := make(map[int]*result)
	next := 0
	for {
		select {
		case <-ctx.Done():
			return p.finishJudged()
		case r, ok := <-results:
			if !ok {
				return p.finishJudged()
			}
			pending[r.seq] = r
			// Each result is judged and may fill a batch, so that a batch
			// holds about FlushLines lines even when the results waiting
			// for an earlier one are applied at once.
			for r := pending[next]; r != nil; r = pending[next] {
				delete(pending, next)
				next++
				if p.shards != nil {
					p.resolve(r)
					p.dispatch(r)
				} else {
					p.apply(r)
					p.pool.Put(r)
				}
				if _, bad := p.judge(false, false); bad != nil {
					return bad
				}
				if p.all.batch.Lines() >= p.replayFlushLines() {
					if err := p.handOffJudged(); err != nil {
						return err
					}
				}
			}
		case <-flush.C:
			if err := p.handOffJudged(); err != nil {
				return err
			}
		}
	}
}

// replayFlushLines is how many lines a replay's batches hold before they
// are committed: FlushLines, times the sites in them up to ten. A commit
// merges each of its sites' hours and days once, so with many sites
// small batches spend most of a commit on merges (100 sites, 2M lines:
// 581k lines/s at 50,000 lines a commit, 1.30M at 500,000); ten times
// FlushLines bounds the memory they take.
func (p *Pipeline) replayFlushLines() int {
	return p.cfg.FlushLines * min(max(len(p.touched), 1), 10)
}

// handOffJudged hands the batches off to be committed (see handOff) once
// the first lines have had their verdict (a verdict against them ends
// Replay before).
func (p *Pipeline) handOffJudged() error {
	if !p.judged {
		return nil // held until the verdict
	}
	return p.handOff()
}

// handOff commits what the batches hold on a goroutine of its own, so that
// applying the next lines goes on meanwhile. Up to commitsInFlight
// commits are under way at once: each is prepared as soon as it is handed
// off (a Preparer's commits, on several cores) and written once the one
// before has been, so they are stored in order, each with the positions
// its lines end at, and none after one that failed. A site's batches
// rotate: one filling, the others committing. When as many commits as
// allowed are under way, handOff waits for the oldest, and returns its
// error.
func (p *Pipeline) handOff() error {
	if p.all.batch.Empty() && (p.shards == nil || p.all.batch.Lines() == 0) {
		return nil
	}
	for len(p.flight) >= p.commitsInFlight() {
		if err := p.waitOldest(); err != nil {
			return err
		}
	}
	c := &flight{done: make(chan struct{}), merged: make(chan struct{})}
	bs := make([]*tally.Batch, 0, len(p.touched)+1)
	// With shards, the batches handed off by site id and counter index,
	// for the shards' to merge into.
	var sites, counters []*tally.Batch
	if p.shards != nil {
		sites, counters = make([]*tally.Batch, len(p.list)), make([]*tally.Batch, len(p.counters))
	}
	take := func(s *siteState) {
		b := s.batch
		bs = append(bs, b)
		c.sites = append(c.sites, s)
		if p.shards != nil && s.counter {
			counters[s.id] = b
		} else if p.shards != nil {
			sites[s.id] = b
		}
		if n := len(s.free); n > 0 {
			s.batch, s.free = s.free[n-1], s.free[:n-1]
		} else {
			s.batch = tally.NewSiteBatch(s.name)
		}
		s.inBatch = false
	}
	for _, s := range p.touched {
		if s != p.all {
			take(s)
		}
	}
	take(p.all)
	c.batches = bs
	p.touched = p.touched[:0]
	var prev *flight
	if n := len(p.flight); n > 0 {
		prev = p.flight[n-1]
	}
	p.flight = append(p.flight, c)
	ss := p.shards
	if ss != nil {
		ss.cut()
	}
	go func() {
		defer close(c.done)
		began := time.Now()
		if ss != nil {
			if prev != nil {
				<-prev.merged // the shards' batches come in order of their cuts
			}
			err := ss.merge(sites, counters)
			close(c.merged)
			if err != nil {
				c.err = p.committed(err, began)
				return
			}
		} else {
			close(c.merged)
		}
		var commit func() error
		var err error
		if pr, ok := p.store.(Preparer); ok {
			commit, err = pr.Prepare(bs...)
		} else {
			commit = func() error { return p.store.Commit(bs...) }
		}
		if prev != nil {
			if <-prev.done; prev.err != nil {
				c.err = prev.err // stored after a commit that was not: never
				return
			}
		}
		if err == nil {
			err = commit()
		}
		if c.err = p.committed(err, began); c.err == nil {
			for _, b := range bs {
				b.Reset()
			}
		}
	}()
	return nil
}

// flight is a commit under way (see handOff).
type flight struct {
	done    chan struct{} // closed once it is written, or has failed
	err     error         // set before done is closed
	merged  chan struct{} // closed once the shards' batches are merged into it
	sites   []*siteState  // whose batches it commits, in order
	batches []*tally.Batch
}

// Preparer is a Committer that can prepare a commit before writing it
// (*storage.Store): Replay then prepares several at once, on several
// cores, while one writes. The commit it returns writes what was prepared.
type Preparer interface {
	Prepare(...*tally.Batch) (commit func() error, err error)
}

// commitsInFlight is how many commits Replay may have under way at once:
// Config.CommitsInFlight, or by default one per apply shard, at least one
// (the layout of a machine with many cores goes together).
func (p *Pipeline) commitsInFlight() int {
	if p.cfg.CommitsInFlight > 0 {
		return p.cfg.CommitsInFlight
	}
	if p.shards != nil {
		return p.shards.n
	}
	return 1
}

// waitOldest waits for the oldest commit under way and returns its error;
// once it succeeded, its emptied batches are its sites' to fill again.
func (p *Pipeline) waitOldest() error {
	c := p.flight[0]
	<-c.done
	p.flight = append(p.flight[:0], p.flight[1:]...)
	if c.err != nil {
		return c.err
	}
	for i, s := range c.sites {
		s.free = append(s.free, c.batches[i])
	}
	return nil
}

// waitCommit waits for every commit under way and returns the first error.
func (p *Pipeline) waitCommit() error {
	var first error
	for len(p.flight) > 0 {
		if err := p.waitOldest(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// finishJudged ends a replay: the verdict, if it is not in yet, on all the
// lines read, then the commit in flight and the last one.
func (p *Pipeline) finishJudged() error {
	if _, bad := p.judge(true, false); bad != nil {
		p.publish()
		return bad
	}
	if p.shards != nil {
		// The shards' last batches go with the last commit.
		if err := p.handOff(); err != nil {
			return err
		}
	}
	if err := p.waitCommit(); err != nil {
		return err
	}
	return p.finish()
}

// applyShards is how many shards apply a replay's hits with workers
// parsing: Config.ApplyShards, or by default one from 4 cores on, then one
// more for every 4 (at 1 or 2 cores the coordinator applies them itself,
// which costs less than handing them over); 0 for none. A replay that
// keeps a window applies on the coordinator, which owns the windows.
func (p *Pipeline) applyShards(workers int) int {
	if !p.cfg.NoWindow {
		return 0
	}
	if p.cfg.ApplyShards != 0 {
		return max(p.cfg.ApplyShards, 0)
	}
	return workers / 4
}

// scratch is what one goroutine parses with, reused from chunk to chunk.
type scratch struct {
	rec  parser.Record
	memo classify.Memo
}

// result is what one chunk's lines amount to, ready to apply: parsing is
// done, so applying it is cheap and can stay on one goroutine.
type result struct {
	seq      int
	now      time.Time // the clock when the chunk was parsed
	file     string
	offset   int64
	size     int64          // bytes of the chunk's lines
	hits     []logtally.Hit // Path aliases the chunk's data
	lines    int64
	rejected []int64        // by index in rejectReasons
	samples  []rejectedLine // the chunk's last rejected lines, at most MaxSamples

	// With several sites: the site of the chunk's file, or nil when each
	// line names its own; then hosts holds the site of each hit, end to
	// end, hit i's ending at hostEnd[i].
	site    []byte
	hosts   []byte
	hostEnd []int32

	// newest is the second of the newest hit, 0 if none is later than
	// 1970: where the chunk's rejected lines count (see Batch.Reject).
	newest int64
	// With shards: the site of the chunk's hits by id (siteState.id), -1
	// for none, or when lines name their own, each hit's; and how many
	// shards have yet to apply it.
	siteID  int32
	siteIDs []int32
	refs    atomic.Int32

	// With named counters: what each hit counts, in hit order, its keys
	// end to end in keys; scratch is the matcher's.
	matches []counted
	keys    []byte
	scratch []counter.Match
}

// matchesEnd returns the end of hit i's matches, which start at mi.
func (r *result) matchesEnd(i, mi int) int {
	for mi < len(r.matches) && int(r.matches[mi].hit) == i {
		mi++
	}
	return mi
}

// counted is one counter a hit counts, and the key, keys[start:end].
type counted struct {
	hit, counter, start, end int32
}

// host returns the site of hit i when lines name their own.
func (r *result) host(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = r.hostEnd[i-1]
	}
	return r.hosts[start:r.hostEnd[i]]
}

// rejectedLine is a rejected line of a chunk; line aliases the chunk's data.
type rejectedLine struct {
	line []byte
	err  error
}

// parse parses every line of c into r, using rec. It only reads p's
// configuration, so workers may call it at once.
//
// A line further ahead of the clock than the window's MaxSkew is rejected
// here, window.ErrTooNew, whatever the window's end: a replay's window
// follows the lines (AnchorLog), so it would otherwise take a line of 2100
// and end there.
func (p *Pipeline) parse(c tailer.Chunk, sc *scratch, r *result) {
	rec := &sc.rec
	if r.rejected == nil {
		r.rejected = make([]int64, len(rejectReasons))
	}
	clear(r.rejected)
	r.now = p.now()
	newest := r.now.Unix() + int64(p.all.win.MaxSkew()/time.Second)
	r.file, r.offset, r.size, r.hits, r.samples = c.File, c.Offset, int64(len(c.Data)), r.hits[:0], r.samples[:0]
	r.site, r.hosts, r.hostEnd = nil, r.hosts[:0], r.hostEnd[:0]
	r.matches, r.keys = r.matches[:0], r.keys[:0]
	r.newest = 0
	byHost := false
	if p.multi {
		if c.Pattern >= 0 && c.Pattern < len(p.patternSite) {
			r.site = p.patternSite[c.Pattern]
		}
		if r.site == nil {
			if byHost = p.cfg.ByField; !byHost {
				r.site = defaultSite
			}
		}
	}
	r.lines = int64(c.Skipped)
	r.rejected[longLineIdx] = int64(c.Skipped)
	data := c.Data
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		r.lines++
		var err error
		if len(line) > p.cfg.MaxLine {
			err = tailer.ErrLongLine
		} else if err = p.format.Parse(line, rec); err == nil {
			if rec.Time.Unix() <= newest {
				r.hits = append(r.hits, p.classifier.ClassifyWith(rec, &sc.memo))
				r.newest = max(r.newest, r.hits[len(r.hits)-1].Time)
				if p.matcher != nil {
					p.match(rec, r)
				}
				if byHost {
					r.hosts = logtally.NormalizeSite(r.hosts, rec.VHost)
					r.hostEnd = append(r.hostEnd, int32(len(r.hosts)))
				}
				continue
			}
			err = window.ErrTooNew
		}
		r.rejected[reasonIndex(err)]++
		if len(r.samples) == MaxSamples {
			copy(r.samples, r.samples[1:])
			r.samples = r.samples[:MaxSamples-1]
		}
		r.samples = append(r.samples, rejectedLine{line, err})
	}
}

// match records the counters the last hit of r counts, with copies of
// their keys (the record's fields are reused by the next line). A counted
// line that is not a page view is given its visitor, which counters count.
func (p *Pipeline) match(rec *parser.Record, r *result) {
	r.scratch = p.matcher.Match(rec.Method, rec.Path, rec.Status, r.scratch[:0])
	if len(r.scratch) == 0 {
		return
	}
	i := len(r.hits) - 1
	if h := &r.hits[i]; !h.PageView {
		h.Visitor = p.classifier.Visitor(rec)
	}
	for _, m := range r.scratch {
		start := len(r.keys)
		r.keys = append(r.keys, m.Key...)
		r.matches = append(r.matches, counted{hit: int32(i), counter: int32(m.Counter), start: int32(start), end: int32(len(r.keys))})
	}
}

func reasonIndex(err error) int {
	for j, reason := range rejectReasons[:len(rejectReasons)-1] {
		if errors.Is(err, reason) {
			return j
		}
	}
	return len(rejectReasons) - 1
}

// count adds a hit to a named counter's window and batch: a page view of
// the counter's key.
func (p *Pipeline) count(r *result, h *logtally.Hit, m counted, live bool) {
	c := p.counters[m.counter]
	ch := logtally.Hit{Time: h.Time, Visitor: h.Visitor, Path: r.keys[m.start:m.end], Bytes: h.Bytes, Status: h.Status,
		PageView: true}
	if !p.cfg.NoWindow {
		p.advance(c, r.now)
		c.win.Add(ch)
	}
	c.batch.Add(&ch, live)
	p.touch(c)
	p.countedLines[m.counter].Add(1)
}

// defaultSite is the site of lines that name none.
var defaultSite = []byte(logtally.DefaultSite)

// apply adds a parsed chunk to the windows and the batches, and moves its
// file's position past it. Every line goes to all's; with several sites,
// also to its site's.
func (p *Pipeline) apply(r *result) {
	parsed := int64(0)
	all := p.all
	live := !p.cfg.NoWindow // windows to count in
	if p.cfg.Anchor == AnchorClock && live {
		// The window's end is at least the clock that parse judged the
		// lines by, so a line parse let through is not too new for it.
		all.win.Advance(r.now)
	}
	var site *siteState // the chunk's, when lines do not name their own
	if p.multi && r.site != nil {
		site = p.siteOf(r.site)
	}
	mi := 0 // r.matches[mi:] are of hit i and after
	for i := range r.hits {
		h := &r.hits[i]
		first := mi
		mi = r.matchesEnd(i, mi)
		if p.cfg.Anchor == AnchorLog && h.Time > p.last {
			p.last = h.Time
			if live {
				all.win.Advance(time.Unix(h.Time, 0))
			}
		}
		outcome := window.Counted
		if live {
			outcome = all.win.Add(*h)
		}
		s := site
		if p.multi && s == nil {
			s = p.siteOf(r.host(i))
		}
		if outcome == window.TooNew {
			// Too far ahead of the window's end (parse turns away what is
			// too far ahead of the clock); the window counted it as
			// rejected already.
			p.rejected[tooNewIdx].Add(1)
			all.batch.Reject(p.now().Unix())
			if s != nil && s != all {
				p.advance(s, r.now)
				s.win.Reject()
				s.batch.Reject(p.now().Unix())
				p.touch(s)
			}
			continue
		}
		parsed++
		second := p.cfg.PersistWindow && (outcome == window.Counted || outcome == window.Held)
		all.batch.Add(h, second)
		for _, m := range r.matches[first:mi] {
			p.count(r, h, m, second)
		}
		if s != nil && s != all {
			if live {
				p.advance(s, r.now)
				s.win.Add(*h)
			}
			s.batch.Add(h, second)
			p.touch(s)
			if s.name == logtally.OtherSite {
				p.otherLines.Add(1)
			}
		}
	}
	p.applyRest(r, site, parsed)
}

// applyRest counts what a chunk adds besides its hits: its lines, the
// rejected ones (in all's batch, and in site's when the chunk's file has
// one), their samples, and its file's position.
func (p *Pipeline) applyRest(r *result, site *siteState, parsed int64) {
	all := p.all
	live := !p.cfg.NoWindow
	all.batch.AddLines(r.lines)
	p.lines.Add(r.lines)
	p.parsed.Add(parsed)
	p.bytes.Add(r.size)
	now := p.now().Unix()
	for i, n := range r.rejected {
		if n > 0 {
			p.rejected[i].Add(n)
			for range n {
				if live {
					all.win.Reject()
				}
				all.batch.Reject(now)
			}
			// A line that did not parse names no site: it counts in the
			// site of its file, when its file has one.
			if site != nil && site != all && r.site != nil && !bytes.Equal(r.site, defaultSite) {
				if live {
					p.advance(site, r.now)
				}
				for range n {
					if live {
						site.win.Reject()
					}
					site.batch.Reject(now)
				}
				p.touch(site)
			}
		}
	}
	for _, s := range r.samples {
		if !p.cfg.NoSamples {
			p.sample(s.line, s.err)
		}
	}
	if n := len(r.samples); n > 0 {
		p.logRejected(r.samples[n-1].line, r.samples[n-1].err)
	}
	if r.file != "" {
		all.batch.SetPosition(r.file, r.offset)
	}
}
