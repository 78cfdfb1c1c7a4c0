// Command loggen writes a seeded, deterministic combined-format access log to
// standard output. testdata/sample.log is made with:
//
//	go run ./cmd/loggen -seed 1 -lines 400 -start 2026-11-21T12:00:00Z -step 1500ms -hosts 60 -paths 30 -bad-every 97
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/logtally/logtally/internal/loggen"
)

func main() {
	var cfg loggen.Config
	var start string
	var lines int
	fs := flag.NewFlagSet("loggen", flag.ContinueOnError)
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	fs.IntVar(&lines, "lines", 1000, "number of lines")
	fs.StringVar(&start, "start", "2026-11-21T12:00:00Z", "timestamp of the first line, RFC3339")
	fs.DurationVar(&cfg.Step, "step", time.Second, "time between lines")
	fs.IntVar(&cfg.Hosts, "hosts", 100, "distinct clients")
	fs.IntVar(&cfg.Paths, "paths", 50, "distinct page paths")
	fs.IntVar(&cfg.BadEvery, "bad-every", 0, "make every Nth line malformed (0: none)")
	fs.BoolVar(&cfg.Distinct, "distinct", false, "make every page path a new one, numbered by the line (for floods of keys)")
	sites := fs.Int("sites", 0, "write vhost_combined lines of this many sites, siteN.example:80 (0: combined lines)")
	randomSites := fs.Bool("random-sites", false, "write vhost_combined lines, each of a new random site (a Host flood)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	t, err := time.Parse(time.RFC3339, start)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loggen: -start:", err)
		os.Exit(2)
	}
	cfg.Start = t
	g := loggen.New(cfg)
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	var buf []byte
	rng := rand.New(rand.NewPCG(cfg.Seed, 5))
	for i := range lines {
		buf = buf[:0]
		switch {
		case *randomSites:
			buf = fmt.Appendf(buf, "h%016x.example:80 ", rng.Uint64())
		case *sites > 0:
			buf = fmt.Appendf(buf, "site%d.example:80 ", i%*sites)
		}
		buf = g.Line(buf)
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "loggen:", err)
		os.Exit(1)
	}
}
