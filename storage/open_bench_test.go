package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/logtally/logtally/tally"
)

// openDBs are the database files BenchmarkOpen opens, by commits of 50,000
// lines of a busy site that wrote them; made once per benchmark binary.
var openDBs struct {
	sync.Mutex
	paths map[int]string
}

// openDB returns the path of a database file written by commits commits of 50,000
// lines, as BenchmarkCommit50k's (100,000 paths, 200,000 visitors, lines
// 8.6 ms apart), with its path log compacted as RunPruner would.
func openDB(b *testing.B, commits int) string {
	b.Helper()
	openDBs.Lock()
	defer openDBs.Unlock()
	if path, ok := openDBs.paths[commits]; ok {
		return path
	}
	dir := os.Getenv("LOGTALLY_OPEN_DIR") // files kept there from one run to the next
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "logtally-open-bench"); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(dir, fmt.Sprintf("commits-%d.db", commits))
	if _, err := os.Stat(path); err == nil {
		return remember(path, commits)
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
	return remember(path, commits)
}

func remember(path string, commits int) string {
	if openDBs.paths == nil {
		openDBs.paths = make(map[int]string)
	}
	openDBs.paths[commits] = path
	return path
}

// BenchmarkOpen measures opening (and closing) a database file at the
// start of a daemon, on a small file and on one four hundred times larger: the
// checks at Open read what bbolt reads as it opens, not every page, so the
// time should not grow with the file. file-MB reports the file's size.
// LOGTALLY_OPEN_DIR keeps the files between runs, so that a run can open
// them after they were dropped from the page cache (dd oflag=nocache), as
// a daemon starting after a reboot does.
func BenchmarkOpen(b *testing.B) {
	for _, commits := range []int{1, 400} {
		path := openDB(b, commits)
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
