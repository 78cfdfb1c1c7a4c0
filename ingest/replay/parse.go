package replay

import (
	"context"
	"sync"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/tailer"
)

// parsed is a chunk's result, numbered in the order the chunks came in.
type parsed struct {
	seq int
	res *ingest.Result
}

// parse parses the chunks of in on workers goroutines, until in is closed
// or ctx is done, and returns their results, numbered, in any order. The
// results come from r.pool; apply puts them back.
func (r *Replayer) parse(ctx context.Context, in <-chan tailer.Chunk, workers int) <-chan parsed {
	type job struct {
		seq int
		c   tailer.Chunk
	}
	jobs := make(chan job, workers)
	results := make(chan parsed, 2*workers)
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
			var sc ingest.Scratch
			for j := range jobs {
				res, _ := r.pool.Get().(*ingest.Result)
				if res == nil {
					res = new(ingest.Result)
				}
				r.Parse(j.c, &sc, res)
				select {
				case results <- parsed{j.seq, res}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	return results
}
