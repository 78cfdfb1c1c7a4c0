// Command logtally turns web-server access logs into live visitor counts.
//
//	logtally run [flags] [FILE...]    follow logs and serve the JSON API
//	logtally replay [flags] FILE...   read logs to their end, commit, report
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
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
	var usageErr *UsageError
	if err := m.ParseFlags(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if errors.As(err, &usageErr) {
		// One line per mistake, and where the help is: not the whole help,
		// which would bury the line that matters.
		prefix := "logtally"
		if usageErr.Command != "" {
			prefix += " " + usageErr.Command
		}
		for _, line := range strings.Split(usageErr.Error(), "\n") {
			fmt.Fprintf(os.Stderr, "%s: %s\n", prefix, line)
		}
		fmt.Fprintln(os.Stderr, usageErr.Help())
		return 2
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "logtally:", err)
		return 2
	}
	if err := m.Run(ctx); err != nil {
		m.Close()
		fmt.Fprintln(os.Stderr, "logtally:", err)
		return 1
	}
	if m.Command == "run" {
		// SIGHUP re-scans the followed paths and globs; SIGTERM and SIGINT
		// end ctx, and Close stops reading, commits and shuts down.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		for waiting := true; waiting; {
			select {
			case <-hup:
				m.Rescan()
			case <-ctx.Done():
				waiting = false
			}
		}
		signal.Stop(hup)
		m.Logger.Info("stopping: committing what was read")
	}
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "logtally:", err)
		return 1
	}
	return 0
}
