package replay

import (
	"context"
	"fmt"
	"sync"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/tailer"
)

// parsed is a chunk's result, numbered in the order the chunks came in;
// err is the chunk's mapped file's having shrunk while it was parsed
// (tailer.ErrTruncated), which ends the replay.
type parsed struct {
	seq int
	res *ingest.Result
	err error
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
				err := tailer.ReadMapped(func() { r.Parse(j.c, &sc, res) })
				if err != nil {
					err = fmt.Errorf("replay %s: %w", j.c.Path, err)
				}
				select {
				case results <- parsed{j.seq, res, err}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	return results
}
