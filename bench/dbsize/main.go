// Command dbsize reports how large the database grows for a day of traffic:
// it generates combined-format lines (internal/loggen), parses and counts
// them exactly as ingest does, commits them in 50,000-line batches, and
// prints the file size.
//
//	go run ./bench/dbsize -lines 10000000 -paths 100000
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/loggen"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

func main() {
	lines := flag.Int("lines", 10_000_000, "lines in the day")
	paths := flag.Int("paths", 100_000, "distinct page paths")
	hosts := flag.Int("hosts", 300_000, "distinct clients")
	batch := flag.Int("batch", 50_000, "lines per commit")
	dir := flag.String("dir", "", "directory for the database (default: a temporary one)")
	flag.Parse()
	if err := run(*lines, *paths, *hosts, *batch, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "dbsize:", err)
		os.Exit(1)
	}
}

func run(lines, paths, hosts, batchLines int, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "dbsize")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	db := filepath.Join(dir, "logtally.db")
	// The store's clock follows the log, and the pruner runs as it would
	// during a live day, so that the file holds what a day leaves behind.
	var now, pruned time.Time
	s, err := storage.Open(storage.Config{Path: db, TZ: "UTC"}, func() time.Time { return now })
	if err != nil {
		return err
	}
	defer s.Close()
	// The daemon's background work: compacting the path log when a commit
	// asks for it. Pruning runs below, on the log's clock.
	ctx, cancel := context.WithCancel(context.Background())
	pruner := make(chan struct{})
	go func() {
		defer close(pruner)
		s.RunPruner(ctx, 24*time.Hour, slog.New(slog.DiscardHandler))
	}()
	stopPruner := func() {
		cancel()
		<-pruner
	}
	defer stopPruner()
	format, err := parser.New("combined")
	if err != nil {
		return err
	}
	classifier, err := classify.New(classify.DefaultConfig(), s.Salt())
	if err != nil {
		return err
	}
	g := loggen.New(loggen.Config{Seed: 1, Start: start, Step: 24 * time.Hour / time.Duration(lines),
		Hosts: hosts, Paths: paths})
	b := tally.NewBatch()
	var rec parser.Record
	var line []byte
	began := time.Now()
	var commitTime time.Duration
	for i := range lines {
		line = g.Line(line[:0])
		now = start.Add(time.Duration(i) * (24 * time.Hour / time.Duration(lines)))
		if format.Parse(line, &rec) != nil {
			b.Reject(rec.Time.Unix())
		} else {
			h := classifier.Classify(&rec)
			b.Add(&h, false)
		}
		if (i+1)%batchLines == 0 || i == lines-1 {
			t := time.Now()
			if err := s.Commit(b); err != nil {
				return err
			}
			commitTime += time.Since(t)
			b.Reset()
			if now.Sub(pruned) >= time.Minute { // the daemon prunes every minute
				pruned = now
				if _, err := s.Prune(context.Background()); err != nil {
					return err
				}
			}
		}
	}
	stopPruner()
	space, err := s.Space()
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	fi, err := os.Stat(db)
	if err != nil {
		return err
	}
	commits := (lines + batchLines - 1) / batchLines
	fmt.Printf("dbsize: %d lines, %d paths, %d hosts: %.1f MB (%.2f MB per million lines); %d commits, %.1f ms per commit; %.1fs in all\n",
		lines, paths, hosts, float64(fi.Size())/1e6, float64(fi.Size())/1e6/(float64(lines)/1e6),
		commits, float64(commitTime.Milliseconds())/float64(commits), time.Since(began).Seconds())

	// The file is the data's high-water mark plus up to a growth step; of
	// that, the pages in use hold data and the rest is free for reuse.
	inUse := space.InUse
	perM := func(b int64) float64 { return float64(b) / 1e6 / (float64(lines) / 1e6) }
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fmt.Printf("dbsize: %.1f MB on disk (%.2f MB per million lines)\n", float64(st.Blocks*512)/1e6, perM(st.Blocks*512))
	}
	fmt.Printf("dbsize: %.1f MB of pages in use (%.2f MB per million lines)\n", float64(inUse)/1e6, perM(inUse))
	return buckets(db)
}

// buckets prints, per bucket of the default site, its keys, the bytes of
// its keys and values, and the bytes of the pages it takes: where the size
// goes.
func buckets(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		site := tx.Bucket([]byte("sites")).Bucket([]byte(logtally.DefaultSite))
		return site.ForEachBucket(func(name []byte) error {
			b := site.Bucket(name)
			var keys, data int
			b.ForEach(func(k, v []byte) error {
				keys++
				data += len(k) + len(v)
				return nil
			})
			st := b.Stats()
			pages := st.BranchAlloc + st.LeafAlloc
			fmt.Printf("dbsize: bucket %-10s %8d keys %9.2f MB data %9.2f MB pages\n", name, keys, float64(data)/1e6, float64(pages)/1e6)
			return nil
		})
	})
}
