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
	var c config
	flag.IntVar(&c.lines, "lines", 10_000_000, "lines in the day")
	flag.IntVar(&c.paths, "paths", 100_000, "distinct page paths")
	flag.IntVar(&c.hosts, "hosts", 300_000, "distinct clients")
	flag.IntVar(&c.batch, "batch", 50_000, "lines per commit")
	dir := flag.String("dir", "", "directory for the database (default: a temporary one)")
	flag.Parse()
	if err := run(c, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "dbsize:", err)
		os.Exit(1)
	}
}

// config is the day of traffic: its lines, distinct paths and clients, and
// the lines per commit.
type config struct {
	lines, paths, hosts, batch int
}

func run(c config, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "dbsize")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	db := filepath.Join(dir, "logtally.db")
	// The store's clock follows the log, and the pruner runs as it would
	// during a live day, so that the file holds what a day leaves behind.
	d := &day{config: c, start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}
	s, err := storage.Open(storage.Config{Path: db, TZ: "UTC"}, func() time.Time { return d.now })
	if err != nil {
		return err
	}
	defer s.Close()
	stopBackground := background(s)
	defer stopBackground()
	began := time.Now()
	commitTime, err := d.commit(s)
	if err != nil {
		return err
	}
	stopBackground()
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
	c.print(fi, space.InUse, commitTime, time.Since(began))
	return buckets(db)
}

// background runs the daemon's background work on s: compacting the path
// log when a commit asks for it (pruning runs in day.commit, on the log's
// clock). It returns the function that stops it and waits.
func background(s *storage.Store) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunPruner(ctx, 24*time.Hour, slog.New(slog.DiscardHandler))
	}()
	return func() {
		cancel()
		<-done
	}
}

// day is a day of generated lines committed as the daemon would, on the
// log's clock.
type day struct {
	config
	start  time.Time
	now    time.Time // the log's clock: the time of the line being counted
	pruned time.Time // when the log's clock last pruned
}

// commit parses, classifies and commits the day's lines in batches, prunes
// every minute of log time, and returns the time spent in commits.
func (d *day) commit(s *storage.Store) (time.Duration, error) {
	format, err := parser.New("combined")
	if err != nil {
		return 0, err
	}
	classifier, err := classify.New(classify.DefaultConfig(), classify.Fixed{})
	if err != nil {
		return 0, err
	}
	step := 24 * time.Hour / time.Duration(d.lines)
	g := loggen.New(loggen.Config{Seed: 1, Start: d.start, Step: step, Hosts: d.hosts, Paths: d.paths})
	b := tally.NewBatch()
	var rec parser.Record
	var line []byte
	var commitTime time.Duration
	for i := range d.lines {
		line = g.Line(line[:0])
		d.now = d.start.Add(time.Duration(i) * step)
		if format.Parse(line, &rec) != nil {
			b.Reject(rec.Time.Unix())
		} else {
			h := classifier.Classify(&rec)
			b.Add(&h, false)
		}
		if (i+1)%d.batch != 0 && i != d.lines-1 {
			continue
		}
		t := time.Now()
		if err := s.Commit(b); err != nil {
			return commitTime, err
		}
		commitTime += time.Since(t)
		b.Reset()
		if d.now.Sub(d.pruned) >= time.Minute { // the daemon prunes every minute
			d.pruned = d.now
			if _, err := s.Prune(context.Background()); err != nil {
				return commitTime, err
			}
		}
	}
	return commitTime, nil
}

// print writes the file's size, on disk and in pages in use (inUse), per
// million lines, and what the commits took.
func (c config) print(fi os.FileInfo, inUse int64, commitTime, elapsed time.Duration) {
	commits := (c.lines + c.batch - 1) / c.batch
	fmt.Printf("dbsize: %d lines, %d paths, %d hosts: %.1f MB (%.2f MB per million lines); %d commits, %.1f ms per commit; %.1fs in all\n",
		c.lines, c.paths, c.hosts, float64(fi.Size())/1e6, float64(fi.Size())/1e6/(float64(c.lines)/1e6),
		commits, float64(commitTime.Milliseconds())/float64(commits), elapsed.Seconds())

	// The file is the data's high-water mark plus up to a growth step; of
	// that, the pages in use hold data and the rest is free for reuse.
	perM := func(b int64) float64 { return float64(b) / 1e6 / (float64(c.lines) / 1e6) }
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fmt.Printf("dbsize: %.1f MB on disk (%.2f MB per million lines)\n", float64(st.Blocks*512)/1e6, perM(st.Blocks*512))
	}
	fmt.Printf("dbsize: %.1f MB of pages in use (%.2f MB per million lines)\n", float64(inUse)/1e6, perM(inUse))
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
