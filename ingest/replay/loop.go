package replay

import (
	"context"
	"runtime"
	"time"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/tailer"
)

// Replay consumes chunks until in is closed or ctx is done, then commits
// what is left. Workers parse chunks on every core into results, and this
// goroutine applies them in the order the chunks came in, so a position
// is only committed once every line before it, in every file, has been
// counted. A failed commit ends Replay with the error.
//
// Nothing is committed before the verdict on the first lines (see
// ingest.Core.Judge): when most of them are rejected, Replay returns an
// *ingest.FormatError and commits nothing, so that a replay with the right
// format reads them all.
func (r *Replayer) Replay(ctx context.Context, in <-chan tailer.Chunk) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := r.parse(ctx, in, max(1, runtime.GOMAXPROCS(0)))
	flush := time.NewTicker(r.Config().FlushInterval)
	defer flush.Stop()
	order := inOrder{waiting: make(map[int]*ingest.Result)}
	for {
		select {
		case <-ctx.Done():
			return r.finish()
		case p, ok := <-results:
			if !ok {
				return r.finish()
			}
			if p.err != nil {
				// Nothing is committed past the lines counted whole.
				return p.err
			}
			order.waiting[p.seq] = p.res
			// Each result is judged and may fill a batch, so that a batch
			// holds about FlushLines lines even when the results waiting
			// for an earlier one are applied at once.
			for res := order.take(); res != nil; res = order.take() {
				var err error
				if fault := tailer.ReadMapped(func() { err = r.apply(res) }); fault != nil {
					return fault
				}
				if err != nil {
					return err
				}
			}
		case <-flush.C:
			if err := r.handOffJudged(); err != nil {
				return err
			}
		}
	}
}

// inOrder puts the results back in the order of their chunks.
type inOrder struct {
	waiting map[int]*ingest.Result // by seq
	next    int
}

// take returns the next result in order, or nil if it has not come yet.
func (o *inOrder) take() *ingest.Result {
	res := o.waiting[o.next]
	if res != nil {
		delete(o.waiting, o.next)
		o.next++
	}
	return res
}

// apply routes and applies a result, and hands the batches off to be
// committed once they hold enough lines. It returns the verdict against
// the first lines, if there is one.
func (r *Replayer) apply(res *ingest.Result) error {
	r.Route(res)
	r.Apply(res)
	res.Release()
	r.pool.Put(res)
	if _, bad := r.Judge(false, false); bad != nil {
		return bad
	}
	if lines, sites := r.PendingLines(); lines >= r.flushLines(sites) {
		return r.handOffJudged()
	}
	return nil
}

// flushLines is how many lines a replay's batches hold before they are
// committed, with sites sites in them: FlushLines, times the sites up to
// twice. A commit merges each of its sites' hours and days once, so with
// many sites small batches spend more of a commit on merges; but what a
// replay holds in memory grows with the site-minutes in its batches, not
// with their lines: a commit of 100 sites at 6 lines a site a minute
// holds 100 site-minutes where one site's holds one. At twice, 1M lines of
// 100 sites peak at 160-166 MB of RSS, against 196-200 MB at four times,
// for 3% more CPU (and 1,000 sites at 519 MB against 660, for 12% more).
func (r *Replayer) flushLines(sites int) int {
	return r.Config().FlushLines * min(max(sites, 1), maxSiteFlushes)
}

// maxSiteFlushes is the most times FlushLines a replay's batches hold.
const maxSiteFlushes = 2

// finish ends a replay: the verdict, if it is not in yet, on all the lines
// read, then the last commit.
func (r *Replayer) finish() error {
	if _, bad := r.Judge(true, false); bad != nil {
		return bad
	}
	if err := r.handOff(); err != nil {
		return err
	}
	return r.wait()
}
