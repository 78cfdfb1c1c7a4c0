// Command logtally turns web-server access logs into live visitor counts.
//
//	logtally run [flags] [FILE...]    follow logs and serve the JSON API
//	logtally replay [flags] FILE...   read logs to their end, commit, report
//	logtally report [flags]           print a range of days the database holds
//	logtally check --db FILE          check a database file for damage
//	logtally version                  print the version
//
// main only wires: each command is a type of its own (run.go, replay.go,
// report.go, check.go, version.go) with its flags bound to its
// configuration; Main picks one by the first argument and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/logtally/logtally/classify"
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
	if d, ok := m.cmd.(*runCmd); ok {
		serveUntilDone(ctx, d)
	}
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "logtally:", err)
		return 1
	}
	return 0
}

// serveUntilDone waits for SIGTERM or SIGINT (which end ctx), re-scanning
// the followed paths and globs at each SIGHUP meanwhile.
func serveUntilDone(ctx context.Context, d *runCmd) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			d.Rescan()
		case <-ctx.Done():
			d.proc.Logger.Info("stopping: committing what was read")
			return
		}
	}
}

// process is what every command takes from the process it runs in: the
// clock, where it writes, the environment, and what tests fix to make
// output reproducible. Main holds one; its commands share it.
type process struct {
	Now    func() time.Time // clock; time.Now unless a test injects one
	Stdout io.Writer
	Stderr io.Writer
	// Getenv looks up environment variables for flags; os.LookupEnv unless
	// a test injects one.
	Getenv func(string) (string, bool)
	// Logger is what run and replay log to: built from --log-format and
	// --log-level on Stderr, unless a test gives one.
	Logger *slog.Logger
	// Keys, if set, hashes every visitor in place of the day keys of
	// --visitor-secret-file or of the keys file: for tests whose output
	// shows estimates, which must come out the same every run.
	Keys classify.Keys
}

// Main is the program: the command the arguments name, and what it shares
// with the process. The tests drive this same struct: NewMain, ParseFlags,
// Run and Close.
type Main struct {
	process
	cmd command // set by ParseFlags
}

// NewMain returns a Main that runs in this process.
func NewMain() *Main {
	return &Main{process: process{Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.LookupEnv}}
}

// ParseFlags picks the command the first argument names, and reads its
// flags (from the environment, then from args) and its other arguments,
// checking them before anything starts. Mistakes are *UsageError.
func (m *Main) ParseFlags(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(m.Stderr, usage)
		if len(args) == 0 {
			return errors.New("no command")
		}
		return flag.ErrHelp
	}
	spec, err := lookupCommand(args[0])
	if err != nil {
		return &UsageError{Err: err}
	}
	if m.Getenv == nil {
		m.Getenv = os.LookupEnv
	}
	cmd := spec.new(&m.process)
	fs := spec.flagSet(cmd)
	if err := applyEnv(fs, m.Getenv); err != nil {
		return &UsageError{Command: spec.name, Err: err}
	}
	rest, err := parseArgs(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		printFlags(m.Stderr, spec.synopsis, fs)
		return err
	}
	var unknown *unknownFlagError
	if errors.As(err, &unknown) {
		err = unknown.explain(fs, spec.other)
	}
	if err == nil {
		err = cmd.check(rest)
	}
	if err != nil {
		return &UsageError{Command: spec.name, Err: err}
	}
	m.cmd = cmd
	return nil
}

// Run runs the command. For run, it returns once the API is listening and
// the files are being followed; Close stops them. The others return when
// they are done.
func (m *Main) Run(ctx context.Context) error {
	if m.cmd == nil {
		return errors.New("no command: ParseFlags first")
	}
	return m.cmd.Run(ctx)
}

// Close stops what Run started and closes the database. It is safe to call
// after a failed Run, and more than once.
func (m *Main) Close() error {
	if m.cmd == nil {
		return nil
	}
	return m.cmd.Close()
}

// Addr returns the address the admin listener listens on, once run's Run
// has returned.
func (m *Main) Addr() string { return m.cmd.(*runCmd).Addr() }

// PublicAddr returns the address the public listener listens on, once
// run's Run has returned; empty without --public-listen.
func (m *Main) PublicAddr() string { return m.cmd.(*runCmd).PublicAddr() }

// DebugAddr returns the address the profiles are served on, once run's Run
// has returned; empty when they are not served.
func (m *Main) DebugAddr() string { return m.cmd.(*runCmd).DebugAddr() }

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
