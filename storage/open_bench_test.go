package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/logtally/logtally/tally"
)

// openDB returns the path of a database file in dir written by commits
// commits of 50,000 lines, as BenchmarkCommit50k's (100,000 paths, 200,000
// visitors, lines 8.6 ms apart), with its path log compacted as RunPruner
// would; a file of that name already in dir is taken as it is.
func openDB(b *testing.B, dir string, commits int) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("commits-%d.db", commits))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	s, err := Open(Config{Path: path, TZ: "UTC"}, fixedNow)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	paths := makePaths(100_000)
	at := t0
	batch := tally.NewBatch()
	for range commits {
		batch.Reset()
		at = fillBatch(batch, rng, paths, at, 50_000, false)
		if err := s.Commit(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkOpen measures opening (and closing) a database file at the
// start of a daemon, on a small file (4 MB) and on one written by four
// hundred times as many lines (215 MB): Open reads what bbolt reads as it
// opens a file and what it needs, not every page, so its time should not
// grow with the file. file-MB reports the file's size.
//
// Writing the files takes most of a minute. LOGTALLY_OPEN_DIR names a
// directory to keep them in from one run to the next, so that a run can
// also open them after they were dropped from the page cache (dd
// oflag=nocache conv=notrunc count=0 of=FILE), as a daemon starting after
// a reboot does: -benchtime 1x then times that one open.
func BenchmarkOpen(b *testing.B) {
	dir := os.Getenv("LOGTALLY_OPEN_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	for _, commits := range []int{1, 400} {
		path := openDB(b, dir, commits)
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("commits=%d", commits), func(b *testing.B) {
			for b.Loop() {
				s, err := Open(Config{Path: path, TZ: "UTC"}, fixedNow)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(info.Size())/1e6, "file-MB")
		})
	}
}
