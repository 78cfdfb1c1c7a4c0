package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/logtally/logtally/storage"
)

// exitDamaged is the exit status when the database file is damaged: the
// systemd unit does not restart logtally on it (RestartPreventExitStatus),
// since every start would refuse the file again.
const exitDamaged = 3

func init() {
	synopsis["check"] = "logtally check --db FILE"
}

// parseCheck reads the flags of `logtally check`: only which file.
func (m *Main) parseCheck(args []string) error {
	fs := flag.NewFlagSet("logtally check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&m.Store.Path, "db", storage.DefaultConfig().Path, "database `file` to check")
	if err := applyEnv(fs, m.Getenv); err != nil {
		return m.usageError(err)
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		usageFunc(fs, m.Stderr, synopsis["check"])()
		return err
	} else if err != nil {
		return m.usageError(flagError(fs, flag.NewFlagSet("", flag.ContinueOnError), err))
	}
	if fs.NArg() > 0 {
		return m.usageError(fmt.Errorf("check takes no FILE (%s): name the database with --db", fs.Arg(0)))
	}
	return nil
}

// runCheck checks the database file and prints what it found, with how to
// recover when the file is damaged.
func (m *Main) runCheck() error {
	path := m.Store.Path
	err := storage.Check(path)
	var damage *storage.DamageError
	switch {
	case err == nil:
		fmt.Fprintf(m.Stdout, "%s: no damage found: every page was read, and bbolt's consistency check passed\n", path)
		return nil
	case errors.As(err, &damage):
		fmt.Fprintf(m.Stdout, "%s is damaged:\n", path)
		for _, p := range damage.Problems {
			fmt.Fprintf(m.Stdout, "  %s\n", p)
		}
		if damage.More > 0 {
			fmt.Fprintf(m.Stdout, "  and %d more\n", damage.More)
		}
		fmt.Fprint(m.Stdout, strings.ReplaceAll(recovery, "DB", path))
		return fmt.Errorf("%s: %w", path, storage.ErrDamaged)
	}
	return storeFix(err, path)
}

// recovery is what check prints after the damage: a file is not repaired
// in place, it is replaced.
const recovery = `It cannot be repaired in place. Stop logtally, then either:
  - restore DB from a backup and start logtally again: it reads the logs
    from the positions the backup holds, so nothing is counted twice; or
  - move it aside and replay the logs you still have into a new file:
      mv DB DB.damaged
      logtally replay --db DB /var/log/nginx/access.log*
    and start logtally again (history older than those logs is lost).
`

// storeFix adds to an error of opening the database what to do about it.
func storeFix(err error, path string) error {
	switch {
	case errors.Is(err, storage.ErrDamaged):
		return fmt.Errorf("%w; run 'logtally check --db %s' for what is damaged and how to recover", err, path)
	case errors.Is(err, storage.ErrLocked):
		return fmt.Errorf("%w: stop that process first, or give this one another --db", err)
	}
	return err
}
