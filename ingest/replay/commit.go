package replay

import (
	"time"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/tally"
)

// flight is a commit under way (see handOff).
type flight struct {
	done    chan struct{} // closed once it is written, or has failed
	err     error         // set before done is closed
	sites   []*ingest.Site
	batches []*tally.Batch // sites[i]'s
}

// handOffJudged hands the batches off to be committed (see handOff) once
// the first lines have had their verdict (a verdict against them ends
// Replay before).
func (r *Replayer) handOffJudged() error {
	if !r.Judged() {
		return nil // held until the verdict
	}
	return r.handOff()
}

// handOff commits what the batches hold on a goroutine of its own, so that
// applying the next lines goes on meanwhile, and gives each site an empty
// batch to fill. The commit before must be done first, and it returns
// that commit's error: commits are stored in order, each with the
// positions its lines end at, and none after one that failed.
func (r *Replayer) handOff() error {
	pending := r.Pending()
	if pending == nil {
		return nil
	}
	if err := r.wait(); err != nil {
		return err
	}
	c := &flight{done: make(chan struct{})}
	for _, s := range pending {
		c.sites = append(c.sites, s)
		c.batches = append(c.batches, s.Batch)
		s.Batch = r.emptyBatch(s)
	}
	r.ClearPending()
	r.flight = c
	go r.commit(c)
	return nil
}

// emptyBatch returns an emptied batch of s's, or a new one.
func (r *Replayer) emptyBatch(s *ingest.Site) *tally.Batch {
	free := r.free[s]
	if n := len(free); n > 0 {
		r.free[s] = free[:n-1]
		return free[n-1]
	}
	return s.NewBatch()
}

// commit writes c: prepared first when the store is a Preparer, on
// several cores, then in one transaction.
func (r *Replayer) commit(c *flight) {
	defer close(c.done)
	began := time.Now()
	var err error
	if pr, ok := r.store.(Preparer); ok {
		var commit func() error
		if commit, err = pr.Prepare(c.batches...); err == nil {
			err = commit()
		}
	} else {
		err = r.store.Commit(c.batches...)
	}
	if c.err = r.Committed(err, began); c.err == nil {
		for _, b := range c.batches {
			b.Reset()
		}
	}
}

// wait waits for the commit under way, if there is one, and returns its
// error; once it succeeded, its emptied batches are its sites' to fill
// again.
func (r *Replayer) wait() error {
	c := r.flight
	if c == nil {
		return nil
	}
	<-c.done
	r.flight = nil
	if c.err != nil {
		return c.err
	}
	for i, s := range c.sites {
		r.free[s] = append(r.free[s], c.batches[i])
	}
	return nil
}
