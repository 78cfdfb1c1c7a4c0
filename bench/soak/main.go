// Command soak runs logtally for a long while under the faults a real server
// meets, and checks at the end that every line was counted exactly once.
//
// The one idea: the writer is the truth. It appends generated lines at a
// steady rate, stamped by a clock that advances one step per line, and keeps
// what each line counts for (request, page view, visitor, bytes, second).
// Whatever happens to the files meanwhile (rename and copytruncate
// rotations, gzip while the daemon is down, two rotations in one downtime)
// and to the daemon (SIGKILL at random moments, a replay of the rotated
// files between two runs, a full disk), every stored minute and the live
// window must equal that truth at the end.
//
// With -fleet the daemons ship to a throwaway PostgreSQL, which it stops
// as a crash would, and it adds what a fleet meets: poison lines (paths
// with raw bytes, as nginx logs them), a second process started under the
// node's name with a fresh database, the node's database restored from a
// backup and started while PostgreSQL is down, and a second node whose
// lines are dated ahead, with another --window and --max-skew. The fleet's
// minutes and live window must then equal the truth of both nodes' lines.
//
//	go run ./bench/soak                  # 10 minutes
//	go run ./bench/soak -duration 60s    # what CI runs
//	go run ./bench/soak -seed 42 -keep   # repeat a run's decisions, keep its files
//	go run ./bench/soak -fleet           # ship to a throwaway PostgreSQL, and restart it
//
// It prints each fault as it happens, then a table of lines written,
// counted, lost and doubled, each fault's count and the daemons' peak RSS,
// and exits with 1 on any loss, double count or other difference (printing
// the first differing minutes), 2 on a bad flag or on -fleet without
// PostgreSQL installed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, c, os.Stdout)
	stop()
	os.Exit(code)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "how long to write, kill and rotate before the final check")
	fs.IntVar(&c.rate, "rate", 200, "lines written per second")
	fs.DurationVar(&c.rotate, "rotate", 20*time.Second, "time between two rotations of the log")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of every random decision (0: from the clock; the run prints it)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (logs, database, daemon log)")
	fs.StringVar(&c.bin, "bin", "", "logtally binary to drive (default: build ./cmd/logtally)")
	fs.StringVar(&c.windowEnd, "window-end", "clock", "the daemons' --window-end: clock or log")
	fs.DurationVar(&c.window, "window", 10*time.Minute, "the daemons' --window: shorter than -duration, the window's start moves through counted lines")
	fs.DurationVar(&c.maxUp, "max-up", 0, "longest a daemon runs before it is killed (default: duration/20, from 3s to 20s)")
	fs.DurationVar(&c.maxDown, "max-down", 2*time.Second, "longest pause between a kill and the restart, besides what is done meanwhile")
	fs.BoolVar(&c.fleet, "fleet", false, "fleet mode: a throwaway PostgreSQL that every run ships to, stopped and restarted at random "+
		"(no replays: replay has no fleet mode); the fleet's minutes are compared too")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.duration <= 0, c.rotate <= 0, c.maxDown < 0, c.maxUp < 0, c.window <= 0:
		return c, errors.New("-duration and -rotate must be positive, -max-up and -max-down not negative")
	case c.rate <= 0 || c.rate > 1_000_000:
		return c, errors.New("-rate must be from 1 to 1000000 lines a second")
	case c.window%time.Minute != 0:
		return c, fmt.Errorf("-window %s: want whole minutes, so that the last check's window starts on a minute", c.window)
	case c.windowEnd != "clock" && c.windowEnd != "log":
		return c, fmt.Errorf("-window-end %q: want clock or log", c.windowEnd)
	}
	if c.maxUp == 0 {
		c.maxUp = min(max(c.duration/20, 3*time.Second), 20*time.Second)
	}
	if c.seed == 0 {
		c.seed = rand.Uint64()%1_000_000 + 1
	}
	return c, nil
}
