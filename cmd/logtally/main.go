// Command logtally turns web-server access logs into live visitor counts.
//
//	logtally run [flags] [FILE...]    follow logs and serve the JSON API
//	logtally replay [flags] FILE...   read logs to their end, commit, report
//	logtally check --db FILE          check a database file for damage
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/logtally/logtally/storage"
)

func main() { os.Exit(runMain(os.Args[1:], nil)) }

// runMain is the whole program; the tests run it in a child process, with
// setup, if not nil, changing the Main before it parses its flags (the
// README's scripts fix its clock).
func runMain(args []string, setup func(*Main)) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := NewMain()
	if setup != nil {
		setup(m)
	}
	if err := m.ParseFlags(args); err != nil {
		return reportFlags(os.Stderr, err)
	}
	if err := m.Run(ctx); err != nil {
		m.Close()
		fmt.Fprintln(os.Stderr, "logtally:", err)
		if errors.Is(err, storage.ErrDamaged) {
			return exitDamaged
		}
		return 1
	}
	if m.Command == "run" {
		serveUntilDone(ctx, m)
	}
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "logtally:", err)
		return 1
	}
	return 0
}

// reportFlags prints why the command line was refused and returns the exit
// status: 0 for a request for help, 2 for a mistake.
func reportFlags(w io.Writer, err error) int {
	var usageErr *UsageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usageErr):
		// One line per mistake, and where the help is: not the whole help,
		// which would bury the line that matters.
		prefix := "logtally"
		if usageErr.Command != "" {
			prefix += " " + usageErr.Command
		}
		for _, line := range strings.Split(usageErr.Error(), "\n") {
			fmt.Fprintf(w, "%s: %s\n", prefix, line)
		}
		fmt.Fprintln(w, usageErr.Help())
	default:
		fmt.Fprintln(w, "logtally:", err)
	}
	return 2
}

// serveUntilDone waits for SIGTERM or SIGINT (which end ctx), re-scanning
// the followed paths and globs at each SIGHUP meanwhile.
func serveUntilDone(ctx context.Context, m *Main) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			m.Rescan()
		case <-ctx.Done():
			m.Logger.Info("stopping: committing what was read")
			return
		}
	}
}
