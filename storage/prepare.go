package storage

import (
	"runtime"
	"slices"
	"sync"

	"github.com/axiomhq/hyperloglog"
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// A commit's write transaction is one goroutine (bbolt has one writer),
// and most of what it did per line needs nothing stored: sorting a
// minute's visitors, counting its page views per path and ranking them,
// adding them to their hour's and day's sketches, encoding the minute as
// it is stored new. prepareMinutes does that for every minute of a batch
// before the transaction, on up to GOMAXPROCS goroutines, each a run of
// minutes with scratch of its own; the transaction then only merges what
// was prepared with what is stored. So the commit's serial part costs per
// minute and per path of a minute rather than per line, and a replay's
// commits keep up with apply and parsing on more cores.

// minutePrep is what a commit derives from one minute's delta before its
// transaction.
type minutePrep struct {
	minute int64
	d      *tally.Delta // its visitors sorted, repeats dropped
	day    string       // dayKey of the minute, in the site's zone
	// hll holds the delta's visitors, made only when the transaction
	// merges them into a minute that keeps no set (see sketch).
	hll *hyperloglog.Sketch
	ids []pathDelta // page views per path number
	// rec is the minute's record encoded as it is stored when nothing is
	// stored for it yet: with its visitor set.
	rec []byte
}

// rollups are the hour and day records a batch's minutes add up to.
type rollups struct {
	hours map[int64]*record
	days  map[string]*record
}

// prepScratch is one preparing goroutine's reusable memory.
type prepScratch struct {
	pages   pathTally
	top     []logtally.PageCount
	buckets []int32
	hashes  []uint64
	ids     []pathDelta // the minutes' (minutePrep.ids), until released
	recs    []byte      // the minutes' records (minutePrep.rec), until released
}

// minPrepMinutes is the fewest minutes a preparing goroutine is given: a
// live commit's one or two minutes are prepared on the committing one.
const minPrepMinutes = 8

// prepared is a batch's minutes, prepared, and their hours and days.
type prepared struct {
	minutes []minutePrep
	rollups
	scratch []*prepScratch // whose buffers the minutes hold, until release
}

// release gives the memory of prepared commits back, once written; a
// preparation shared by batches of the same lines, once.
func (s *Store) release(ps []prepared) {
	for i, p := range ps {
		if len(p.scratch) == 0 || i > 0 && len(ps[i-1].scratch) > 0 && &ps[i-1].scratch[0] == &p.scratch[0] {
			continue
		}
		for _, sc := range p.scratch {
			sc.ids, sc.recs = sc.ids[:0], sc.recs[:0]
			s.prepPool.Put(sc)
		}
	}
}

// prepare prepares the minutes of every batch, the batches at once when
// there are several. Batches of the same lines (a batch and its views for
// counters that count the same, see withAlso, which puts them next to each
// other) share one preparation: the transaction only reads it.
func (s *Store) prepare(bs []*tally.Batch) []prepared {
	out := make([]prepared, len(bs))
	if len(bs) == 1 {
		out[0] = s.prepareMinutes(bs[0])
		return out
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, b := range bs {
		if i > 0 && b.Same(bs[i-1]) {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = s.prepareMinutes(b)
		})
	}
	wg.Wait()
	for i := 1; i < len(bs); i++ {
		if bs[i].Same(bs[i-1]) {
			out[i] = out[i-1]
		}
	}
	return out
}

// prepareMinutes prepares every minute of b (see minutePrep), in time
// order, with their hours and days.
func (s *Store) prepareMinutes(b *tally.Batch) prepared {
	p := prepared{minutes: make([]minutePrep, 0, b.MinuteCount())}
	for minute, d := range b.Minutes() {
		p.minutes = append(p.minutes, minutePrep{minute: minute, d: d})
	}
	workers := min(runtime.GOMAXPROCS(0), (len(p.minutes)+minPrepMinutes-1)/minPrepMinutes)
	workers = max(workers, 1)
	p.scratch = make([]*prepScratch, workers)
	parts := make([]rollups, workers)
	run := func(w int) {
		lo, hi := w*len(p.minutes)/workers, (w+1)*len(p.minutes)/workers
		p.scratch[w] = s.prepScratch()
		parts[w] = s.prepareRun(p.minutes[lo:hi], b.Paths(), p.scratch[w])
	}
	if workers == 1 {
		run(0)
		p.rollups = parts[0]
		return p
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { run(w) })
	}
	wg.Wait()
	p.rollups = rollups{hours: make(map[int64]*record), days: make(map[string]*record)}
	for _, r := range parts {
		mergeRollups(p.hours, r.hours)
		mergeRollups(p.days, r.days)
	}
	return p
}

// prepScratch returns a preparing goroutine's scratch, from the pool.
func (s *Store) prepScratch() *prepScratch {
	if sc, ok := s.prepPool.Get().(*prepScratch); ok {
		return sc
	}
	return new(prepScratch)
}

// prepareRun prepares a run of minutes with sc, and returns their hours
// and days.
func (s *Store) prepareRun(preps []minutePrep, names []string, sc *prepScratch) rollups {
	r := rollups{hours: make(map[int64]*record), days: make(map[string]*record)}
	sc.pages.grow(len(names))
	sorter := scratch{buckets: sc.buckets, hashes: sc.hashes}
	// The minutes come in time order: most are of the hour and the day of
	// the minute before, looked up once.
	days := dayCache{loc: s.loc}
	var hour, day *record
	var lastHour int64
	var lastDay string
	for i := range preps {
		p := &preps[i]
		d := p.d
		prepare(d, &sorter)
		if h := logtally.FloorDiv(p.minute, 60); hour == nil || h != lastHour {
			hour, lastHour = rollupOf(r.hours, h), h
		}
		if p.day = days.of(p.minute); i == 0 || p.day != lastDay {
			lastDay, day = p.day, nil
			// A day its hours hold whole gets no record unless the
			// commit merges it into a stored one (see lazyday.go).
			if !s.dayAligned([]byte(p.day)) {
				day = rollupOf(r.days, p.day)
			}
		}
		hour.gather(d)
		if day != nil {
			day.gather(d)
		}
		for _, id := range d.Views {
			sc.pages.add(id, 1)
		}
		p.ids = carve(&sc.ids, len(sc.pages.touched))
		for i, id := range sc.pages.touched {
			p.ids[i] = pathDelta{id, sc.pages.n[id]}
		}
		sc.top = sc.pages.take(names, sc.top[:0])
		// As the transaction would store it new: a merge with a stored
		// minute merges the delta itself (see mergeMinute).
		rec := record{denseSet: len(d.Visitors) >= denseFrom}
		rec.add(d)
		rec.Visitors = int64(len(d.Visitors))
		if len(sc.top) <= s.cfg.TopPages {
			// All kept, in the order selectTop gives them: a site's
			// minute has a few paths, and no copy of them is needed.
			slices.SortFunc(sc.top, byViews)
			rec.Top = sc.top
		} else {
			rec.mergeTop(sc.top, s.cfg.TopPages)
		}
		p.rec = rec.encodeSetIn(&sc.recs, d.Visitors)
	}
	sc.buckets, sc.hashes = sorter.buckets, sorter.hashes
	r.seal()
	return r
}

// sketch returns the minute's sketch, nil if it has no visitors: made from
// its visitors, sorted by now, as a commit of them to a new minute would
// have stored it (see setSketch).
func (m *minutePrep) sketch(buf *sketchBuf) *hyperloglog.Sketch {
	if m.hll == nil && len(m.d.Visitors) > 0 {
		if len(m.d.Visitors) >= denseFrom {
			m.hll = denseSketch(m.d.Visitors)
		} else {
			m.hll = minuteSketch(m.d.Visitors, buf)
		}
	}
	return m.hll
}

// mergeRollups adds the records of from to to, key by key.
func mergeRollups[K comparable](to, from map[K]*record) {
	for k, r := range from {
		t := to[k]
		if t == nil {
			to[k] = r
			continue
		}
		t.addTotals(r.Requests, r.PageViews, r.Bytes, r.Rejected, &r.Status)
		t.mergeSketch(r) // prepared, their keys are valid
	}
}

// addSketch adds a minute delta's n visitors, prepared as sk, to the
// minute's record, which has about known visitors already. Small minutes
// keep a compact sparse sketch; from denseFrom visitors on it is dense.
func addSketch(r *record, known int64, n int, sk *hyperloglog.Sketch) {
	if known+int64(n) < denseFrom { // then sk is sparse, as r's
		if r.hll == nil {
			r.hll = sk
		} else {
			r.hll.Merge(sk)
		}
		return
	}
	// Not sk itself, which another site's record of the same lines may
	// read next (see prepare).
	dense := hyperloglog.NewNoSparse()
	dense.Merge(sk)
	if r.hll != nil {
		dense.Merge(r.hll)
	}
	r.hll = dense
}
