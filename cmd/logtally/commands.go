package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

const usage = `logtally turns web-server access logs into live visitor counts.

Usage:
  logtally run [flags] [FILE...]    follow FILEs (paths or quoted globs, such as
                                    '/var/log/nginx/access.log*') and serve the
                                    JSON API; with no FILE, serve what the
                                    database holds
  logtally replay [flags] FILE...   read FILEs (plain or .gz) to their end,
                                    commit, print a summary and exit
  logtally report [flags]           print the totals, the days and the top
                                    pages of a range of days the database holds
  logtally check --db FILE          check a database file for damage, and say
                                    how to recover from it
  logtally version                  print the version, commit and Go version

Run 'logtally run -h', 'logtally replay -h' or 'logtally report -h' for the flags.
`

// command is one of logtally's commands: a type of its own, holding its
// configuration and what its Run starts.
type command interface {
	// registerFlags registers the command's flags, and only those, on fs,
	// bound to its configuration and set to their defaults.
	registerFlags(fs *flag.FlagSet)
	// check takes the arguments that are not flags, and reports what
	// cannot work before anything starts.
	check(args []string) error
	// Run does what the command is for.
	Run(ctx context.Context) error
	// Close stops what Run started; safe after a failed Run, and twice.
	Close() error
}

// commandSpec is how a command is named, described and made.
type commandSpec struct {
	name     string
	synopsis string // the usage line
	// summary is what the command does, for docs/commands.md.
	summary string
	// other is the command whose flags this one's help suggests for a
	// flag it does not have: what a flag given to the wrong command is.
	other string
	new   func(*process) command
}

// commands are logtally's commands, in the order the help lists them.
var commands = []commandSpec{
	{name: "run", synopsis: "logtally run [flags] [FILE...]", other: "replay",
		summary: "Follows FILEs (paths, or quoted globs such as '/var/log/nginx/access.log*'), counts their lines as they are written, and serves the JSON API. With no FILE, it serves what the database holds.",
		new:     func(p *process) command { return newRunCmd(p) }},
	{name: "replay", synopsis: "logtally replay [flags] FILE...", other: "run",
		summary: "Reads FILEs (plain or .gz) to their end, commits what they count, prints a summary and exits.",
		new:     func(p *process) command { return newReplayCmd(p) }},
	{name: "report", synopsis: "logtally report [flags]", other: "run",
		summary: "Prints the totals, the days and the top pages of a range of days the database holds.",
		new:     func(p *process) command { return &reportCmd{proc: p} }},
	{name: "check", synopsis: "logtally check --db FILE",
		summary: "Checks a database file for damage, and says how to recover from it.",
		new:     func(p *process) command { return &checkCmd{proc: p} }},
	{name: "version", synopsis: "logtally version",
		summary: "Prints the version, the commit and the Go version it was built with.",
		new:     func(p *process) command { return &versionCmd{proc: p} }},
}

// lookupCommand returns the command named name.
func lookupCommand(name string) (commandSpec, error) {
	if name == "--version" || name == "-version" {
		name = "version"
	}
	for _, c := range commands {
		if c.name == name {
			return c, nil
		}
	}
	if strings.HasPrefix(name, "-") {
		return commandSpec{}, fmt.Errorf("flag %s before the command: write it after run, replay or report", name)
	}
	return commandSpec{}, fmt.Errorf("unknown command %q: the commands are run, replay, report, check and version", name)
}

// flagSet returns a new flag set with cmd's flags. The flag package prints
// nothing and parses nothing: parseArgs does, and ParseFlags writes help
// and errors.
func (c commandSpec) flagSet(cmd command) *flag.FlagSet {
	fs := flag.NewFlagSet("logtally "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cmd.registerFlags(fs)
	explainValues(fs)
	return fs
}

// flags returns the command's flags, bound to a command of its own: what
// its help and docs/commands.md list.
func (c commandSpec) flags() *flag.FlagSet {
	return c.flagSet(c.new(&process{}))
}
