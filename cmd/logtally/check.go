package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/logtally/logtally/storage"
)

// exitDamaged is the exit status when the database file is damaged: the
// systemd unit does not restart logtally on it (RestartPreventExitStatus),
// since every start would refuse the file again.
const exitDamaged = 3

// checkCmd is `logtally check`: it reads every page of a database file and
// says whether it is damaged, and if so how to recover.
type checkCmd struct {
	proc *process
	path string // --db
}

func (c *checkCmd) registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.path, "db", storage.DefaultConfig().Path, "database `file` to check")
}

func (c *checkCmd) check(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("check takes no FILE (%s): name the database with --db", args[0])
	}
	return nil
}

// Run checks the database file and prints what it found, with how to
// recover when the file is damaged.
func (c *checkCmd) Run(context.Context) error {
	out := c.proc.Stdout
	err := storage.Check(c.path)
	var damage *storage.DamageError
	switch {
	case err == nil:
		fmt.Fprintf(out, "%s: no damage found: every page was read, every value decoded, and bbolt's consistency check passed\n", c.path)
		return nil
	case errors.As(err, &damage):
		fmt.Fprintf(out, "%s is damaged:\n", c.path)
		for _, p := range damage.Problems {
			fmt.Fprintf(out, "  %s\n", p)
		}
		if damage.More > 0 {
			fmt.Fprintf(out, "  and %d more\n", damage.More)
		}
		fmt.Fprint(out, strings.ReplaceAll(recovery, "DB", c.path))
		return fmt.Errorf("%s: %w", c.path, storage.ErrDamaged)
	}
	return storeFix(err, c.path)
}

func (*checkCmd) Close() error { return nil }

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
	case errors.Is(err, storage.ErrZone):
		return fmt.Errorf("%w: omit --tz to cut them there, or give another --db to cut days in another zone", err)
	case errors.Is(err, storage.ErrForeign):
		return fmt.Errorf("%w; it was left untouched: give --db a logtally database, or a path where none is yet to make one", err)
	}
	return err
}
