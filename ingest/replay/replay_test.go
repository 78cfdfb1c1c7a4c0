package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/ingest/live"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
	"github.com/logtally/logtally/window"
)

var t0 = ingesttest.T0

// newReplayer returns a replayer of the combined format into a new store,
// on the wall clock, and the store.
func newReplayer(tb testing.TB, cfg Config) (*Replayer, *storage.Store) {
	tb.Helper()
	store := ingesttest.Store(tb)
	format, classifier := ingesttest.Combined(tb)
	r, err := New(cfg, Deps{Deps: ingest.Deps{Format: format, Classifier: classifier}, Store: store})
	if err != nil {
		tb.Fatal(err)
	}
	return r, store
}

// TestReplayMatchesRun: parsing on every core and committing while the
// next lines are applied gives the counts and positions of the live loop.
func TestReplayMatchesRun(t *testing.T) {
	cs := ingesttest.Chunks(20_000, 4096)
	runStore := ingesttest.Store(t)
	format, classifier := ingesttest.Combined(t)
	run, err := live.New(live.Config{Anchor: live.AnchorLog}, live.Deps{Deps: ingest.Deps{Format: format, Classifier: classifier},
		Window: window.New(window.Config{Length: 10 * time.Minute}, t0), Store: runStore})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Run(context.Background(), ingesttest.Feed(cs...)); err != nil {
		t.Fatal(err)
	}
	replay, replayStore := newReplayer(t, Config{})
	if err := replay.Replay(context.Background(), ingesttest.Feed(cs...)); err != nil {
		t.Fatal(err)
	}
	if run.Lines() != 20_000 || replay.Lines() != run.Lines() || replay.Parsed() != run.Parsed() || replay.Rejected() != run.Rejected() {
		t.Errorf("replay counted %d/%d/%d, run %d/%d/%d (lines/parsed/rejected)",
			replay.Lines(), replay.Parsed(), replay.Rejected(), run.Lines(), run.Parsed(), run.Rejected())
	}
	for _, file := range []string{"a", "b"} {
		got, _, _ := replayStore.Position(file)
		want, _, _ := runStore.Position(file)
		if got != want || want == 0 {
			t.Errorf("position of %s: replay %d, run %d", file, got, want)
		}
	}
	all := func(s *storage.Store) []logtally.Bucket {
		m, err := s.Minutes(t0.Add(-time.Hour), t0.Add(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := all(runStore), all(replayStore)
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("replay stored %d minutes, run %d", len(b), len(a))
	}
	for i := range a {
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			t.Errorf("minute %d: replay %+v, run %+v", i, b[i], a[i])
		}
	}
}

// TestPipelinedReplayEqualsSerial is the property that makes Replay's
// design safe: on random input (sites by field and by file, more sites than
// MaxSites, a named counter, times out of order, bad lines, random chunks),
// a replay that keeps no window and commits on a goroutine of its own
// while it applies the next lines, with batches of random sizes, stores
// exactly what the live loop stores that applies each chunk to its windows
// and commits it before the next. Rejected lines have no time of their
// own (they count in the minute of their batch's newest line), so only
// their total is compared.
func TestPipelinedReplayEqualsSerial(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 99))
			chunks := ingesttest.RandomChunks(rng, ingest.JudgeLines)
			for i := range chunks {
				chunks[i].Pattern = rng.IntN(2) // pattern 1's lines are c.example's
			}
			cfg := ingest.Config{PatternSites: []string{"", "c.example"}, ByField: true, MaxSites: 2 + int(seed%3)}
			serial := runSerially(t, chunks, cfg)
			cfg.FlushLines = 1 + rng.IntN(500)
			pipelined := replayInto(t, chunks, cfg)
			for _, site := range []string{logtally.AllSites, "a.example", "b.example", "c.example", logtally.DefaultSite,
				logtally.OtherSite, logtally.CounterSite("page")} {
				want, wantRejected := ingesttest.MinutesOf(t, serial, site)
				got, gotRejected := ingesttest.MinutesOf(t, pipelined, site)
				if got != want || gotRejected != wantRejected {
					t.Fatalf("site %s:\npipelined %s (rejected %d)\n   serial %s (rejected %d)", site, got, gotRejected, want, wantRejected)
				}
			}
		})
	}
}

// pageCounter returns a matcher of one counter, "page", of the pages'
// numbers.
func pageCounter(t *testing.T) *counter.Matcher {
	t.Helper()
	cc := counter.DefaultConfig()
	cc.AddCounter("page=GET /p{n}")
	m, err := counter.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// replayInto replays chunks into a new store, with the page counter, and
// checks that it committed more than once.
func replayInto(t *testing.T, chunks []tailer.Chunk, cfg ingest.Config) *storage.Store {
	t.Helper()
	s := ingesttest.Store(t)
	format, classifier := ingesttest.SiteFormat(t)
	core := ingest.Deps{Format: format, Classifier: classifier, Counters: pageCounter(t), Now: func() time.Time { return t0 }}
	r, err := New(Config{Ingest: cfg}, Deps{Deps: core, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Replay(context.Background(), ingesttest.Feed(chunks...)); err != nil {
		t.Fatal(err)
	}
	if r.Commits() < 3 {
		t.Fatalf("%d commits: the batches were never handed off while lines were applied", r.Commits())
	}
	return s
}

// runSerially counts chunks into a new store with the live loop, with the
// page counter, each chunk applied to the windows and committed before the
// next.
func runSerially(t *testing.T, chunks []tailer.Chunk, cfg ingest.Config) *storage.Store {
	t.Helper()
	s := ingesttest.Store(t)
	format, classifier := ingesttest.SiteFormat(t)
	cfg.FlushLines = 1
	core := ingest.Deps{Format: format, Classifier: classifier, Counters: pageCounter(t), Now: func() time.Time { return t0 }}
	l, err := live.New(live.Config{Ingest: cfg, Anchor: live.AnchorLog}, live.Deps{Deps: core, Store: s,
		NewWindow: func(site string, end time.Time) (*window.Window, error) {
			return window.New(window.Config{MaxPaths: 1000, Pages: 1000}, end), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Run(context.Background(), ingesttest.Feed(chunks...)); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestApplyShardsHasNoEffect: --apply-shards is still accepted (and
// checked), so that a unit that sets it still starts; a replayer given it
// says once that it has no effect, and counts as without it.
func TestApplyShardsHasNoEffect(t *testing.T) {
	if err := (Config{ApplyShards: 1000}).Validate(); err == nil ||
		err.Error() != "--apply-shards 1000: want 0 (by the cores), -1 (none) or 1 to 256" {
		t.Errorf("Validate = %v, want the range of --apply-shards", err)
	}
	var log bytes.Buffer
	format, classifier := ingesttest.Combined(t)
	core := ingest.Deps{Format: format, Classifier: classifier, Logger: slog.New(slog.NewTextHandler(&log, nil))}
	r, err := New(Config{ApplyShards: 4}, Deps{Deps: core, Store: ingesttest.Store(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Replay(context.Background(), ingesttest.Feed(ingesttest.Chunks(5_000, 4096)...)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "--apply-shards has no effect"); n != 1 || r.Parsed() != 4_900 {
		t.Errorf("warned %d times, parsed %d; want once, and 4900:\n%s", n, r.Parsed(), log.String())
	}
}

// TestReplayMaxSkewWithSites: a replay that counts sites turns away the
// lines further ahead of the clock than MaxSkew, and only those, as one of
// one site does. (Before the live loop and replay stood apart, a replay
// with sites judged lines by a placeholder window that held no skew.)
func TestReplayMaxSkewWithSites(t *testing.T) {
	format, classifier := ingesttest.SiteFormat(t)
	cfg := DefaultConfig()
	cfg.Ingest.ByField, cfg.Ingest.MaxSkew = true, 2*time.Minute
	core := ingest.Deps{Format: format, Classifier: classifier, Now: func() time.Time { return t0 }}
	r, err := New(cfg, Deps{Deps: core, Store: ingesttest.Store(t)})
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(d time.Duration) string { return t0.Add(d).Format("02/Jan/2006:15:04:05 -0700") }
	data := []byte("a.example 192.0.2.1 [" + stamp(time.Minute) + "] \"GET / HTTP/1.1\" 200 1\n" +
		"a.example 192.0.2.1 [" + stamp(3*time.Minute) + "] \"GET / HTTP/1.1\" 200 1\n")
	in := ingesttest.Feed(tailer.Chunk{File: "f", Data: data, Offset: int64(len(data))})
	if err := r.Replay(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := r.RejectedBy()[ingest.ErrTooNew.Error()]; got != 1 || r.Parsed() != 1 {
		t.Errorf("%d rejected as too new, %d parsed; want 1 and 1", got, r.Parsed())
	}
}

// BenchmarkReplay is a replay of 200,000 lines into a new store, through
// the workers, the applier and the commits under way, as `logtally
// replay` runs it but for reading the files.
func BenchmarkReplay(b *testing.B) {
	cs := ingesttest.Chunks(200_000, tailer.ChunkSize)
	var size int64
	for _, c := range cs {
		size += int64(len(c.Data))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		r, _ := newReplayer(b, Config{})
		b.StartTimer()
		if err := r.Replay(context.Background(), ingesttest.Feed(cs...)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(200_000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// TestReplayOfATruncatedMappedFile: a file truncated while it is
// replayed from its mapping stops the replay with tailer.ErrTruncated
// rather than a crash, whichever parser, or the reader, meets the lost
// pages first, and nothing is committed past the lines counted whole.
func TestReplayOfATruncatedMappedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	var data []byte
	for i := range 20 {
		data = append(data, ingesttest.Chunk(0, i*500, 500).Data...)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, store := newReplayer(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := make(chan tailer.Chunk)
	readErr := make(chan error, 1)
	go func() {
		readErr <- (&tailer.Reader{BufSize: 16 << 10}).Replay(ctx, []string{path}, store.Position, read)
		close(read)
	}()
	in := make(chan tailer.Chunk)
	replayErr := make(chan error, 1)
	go func() { replayErr <- r.Replay(ctx, in) }()
	first := <-read
	in <- first
	second := <-read // cut from the file before it is truncated
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case in <- second: // a parser reads its lost pages
		err = <-replayErr
	case err = <-replayErr: // the first chunk's parser met them already
	}
	if !errors.Is(err, tailer.ErrTruncated) {
		t.Errorf("Replay of chunks of a truncated file = %v, want tailer.ErrTruncated", err)
	}
	cancel()
	for range read {
	}
	if err := <-readErr; err != nil && !errors.Is(err, tailer.ErrTruncated) && !errors.Is(err, context.Canceled) {
		t.Errorf("reader: %v, want ErrTruncated or cancelled", err)
	}
	if off, _, err := store.Position(first.File); err != nil || off > first.Offset {
		t.Errorf("committed up to %d (%v), past the first chunk's end %d, the last counted whole", off, err, first.Offset)
	}
}

// TestSeveralSitesCommitAtTwiceFlushLines: a replay of one site commits
// every FlushLines lines; of several, every twice that, and no more
// whatever their number, since what it holds grows with the sites' minutes.
// Nothing is handed off before the verdict on the first lines.
func TestSeveralSitesCommitAtTwiceFlushLines(t *testing.T) {
	const flush, chunk = 200, 50
	const lines = ingest.JudgeLines + 4000
	for _, tc := range []struct {
		sites  int
		byHost bool
		want   int64 // commits of full batches
	}{
		{1, false, 4000 / flush},
		{10, true, 4000 / (2 * flush)},
		{100, true, 4000 / (2 * flush)},
	} {
		t.Run(fmt.Sprint(tc.sites), func(t *testing.T) {
			data := ingesttest.HostLines(lines, func(i int) string { return fmt.Sprintf("s%d.example", i%tc.sites) })
			var chunks []tailer.Chunk
			for off := 0; off < len(data); {
				end := off
				for range chunk {
					end += bytes.IndexByte(data[end:], '\n') + 1
				}
				chunks = append(chunks, tailer.Chunk{File: "f", Data: data[off:end], Offset: int64(end)})
				off = end
			}
			format, classifier := ingesttest.SiteFormat(t)
			core := ingest.Deps{Format: format, Classifier: classifier, Now: func() time.Time { return t0 }}
			// No flush by the clock: a tick after the verdict (the
			// default is a second, which a loaded machine's race run
			// passes) would commit what the lines had not filled.
			cfg := ingest.Config{FlushLines: flush, ByField: tc.byHost, MaxSites: 1000, FlushInterval: time.Hour}
			r, err := New(Config{Ingest: cfg}, Deps{Deps: core, Store: ingesttest.Store(t)})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Replay(context.Background(), ingesttest.Feed(chunks...)); err != nil {
				t.Fatal(err)
			}
			if got := r.Commits(); got < tc.want || got > tc.want+2 {
				t.Errorf("%d commits of %d lines, want %d (and the first and the last)", got, lines, tc.want)
			}
		})
	}
}
