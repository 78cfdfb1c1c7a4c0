package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
)

// TestPipelinedReplayEqualsSerial is the property that makes Replay's
// design safe: on random input (sites, times out of order, bad lines,
// random chunks), a replay that keeps no window and commits on a goroutine
// of its own while it applies the next lines, with batches of random
// sizes, stores exactly what a serial pipeline stores that applies each
// chunk to its window and commits it before the next. Rejected lines have
// no time of their own (they count in the minute of their batch's newest
// line), so only their total is compared.
func TestPipelinedReplayEqualsSerial(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			chunks := randomChunks(rng)
			serial := replayInto(t, chunks, false, 0)
			pipelined := replayInto(t, chunks, true, 1+rng.IntN(500))
			for _, site := range []string{logtally.AllSites, "a.example", "b.example", logtally.DefaultSite} {
				want, wantRejected := minutesOf(t, serial, site)
				got, gotRejected := minutesOf(t, pipelined, site)
				if got != want || gotRejected != wantRejected {
					t.Fatalf("site %s:\npipelined %s (rejected %d)\n   serial %s (rejected %d)", site, got, gotRejected, want, wantRejected)
				}
			}
		})
	}
}

// randomChunks returns a random log of two sites and no site, cut at
// random line ends.
func randomChunks(rng *rand.Rand) []tailer.Chunk {
	var data []byte
	for range JudgeLines + 3000 + rng.IntN(5000) { // past the verdict, which holds commits back
		if rng.IntN(30) == 0 {
			data = append(data, "a line that does not parse\n"...)
			continue
		}
		host := []string{"a.example", "B.example:443", "-"}[rng.IntN(3)]
		when := t0.Add(-time.Duration(rng.IntN(3*3600)) * time.Second)
		data = fmt.Appendf(data, "%s 192.0.2.%d [%s] \"GET /p%d%s HTTP/1.1\" %d 10\n", host, rng.IntN(40),
			when.Format("02/Jan/2006:15:04:05 -0700"), rng.IntN(30), []string{"", ".css"}[rng.IntN(2)],
			[]int{200, 200, 304, 404, 500}[rng.IntN(5)])
	}
	var chunks []tailer.Chunk
	off := 0
	for off < len(data) {
		end := min(len(data), off+1+rng.IntN(40_000))
		for end < len(data) && data[end-1] != '\n' {
			end++
		}
		chunks = append(chunks, tailer.Chunk{File: "f", Data: data[off:end], Offset: int64(end)})
		off = end
	}
	return chunks
}

// replayInto counts chunks into a new store: pipelined, by Replay with no
// window and flushLines lines a batch; or serially, each chunk applied to
// the windows and committed before the next.
func replayInto(t *testing.T, chunks []tailer.Chunk, pipelined bool, flushLines int) *storage.Store {
	t.Helper()
	p, s := sitePipeline(t, Config{NoWindow: pipelined, FlushLines: flushLines})
	if pipelined {
		in := make(chan tailer.Chunk, len(chunks))
		for _, c := range chunks {
			in <- c
		}
		close(in)
		if err := p.Replay(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if p.Commits() < 3 {
			t.Fatalf("%d commits: the batches were never handed off while lines were applied", p.Commits())
		}
		return s
	}
	for _, c := range chunks {
		p.chunk(c)
		if err := p.commit(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// minutesOf returns a site's stored minutes, rejected lines left out, and
// the rejected lines' total.
func minutesOf(t *testing.T, s *storage.Store, name string) (string, int64) {
	t.Helper()
	site, ok := s.Site(name)
	if !ok {
		return "none", 0
	}
	ms, err := site.Minutes(t0.Add(-24*time.Hour), t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var rejected int64
	var out []logtally.Bucket
	for _, m := range ms {
		rejected += m.Rejected
		m.Rejected = 0
		if m.Requests > 0 {
			out = append(out, m)
		}
	}
	return fmt.Sprint(out), rejected
}
