package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logtally/logtally/internal/golden"
)

// commandsDocPath is the flag reference, generated from the commands'
// flag sets by TestCommandsDoc.
var commandsDocPath = filepath.Join("..", "..", "docs", "commands.md")

// commandsDocIntro is the hand-written top of docs/commands.md.
const commandsDocIntro = `# Commands and flags

<!-- Generated from the commands' flags by
     go test ./cmd/logtally -run TestCommandsDoc -update
     Edit the flags' help in the code (or this intro in
     cmd/logtally/commandsdoc_test.go), not this file. -->

logtally has five commands; the first argument names one:

%s
Each command has flags of its own, which ` + "`logtally COMMAND --help`" + ` lists as
this page does. Flags may come before or after the FILE arguments, as GNU
tools take them: ` + "`logtally run access.log --site blog=blog.log`" + ` follows
access.log with a --site flag. ` + "`--`" + ` ends the flags: what follows it is a
FILE even if it starts with a dash.

Every flag can also be set by an environment variable: LOGTALLY_ and the
flag's name in capitals, dashes as underscores (` + "`--max-skew`" + ` is
` + "`LOGTALLY_MAX_SKEW`" + `). A flag on the command line wins over its variable.
A switch (type bool) is on when given alone; ` + "`--dashboard=false`" + ` turns
one off.
`

// machineDefaults are the defaults that differ from machine to machine,
// as the reference gives them.
var machineDefaults = map[string]string{"node": "the host name"}

// commandsDoc returns docs/commands.md: the intro, then for each command
// its synopsis, what it does, and a table of its flags.
func commandsDoc() string {
	var b strings.Builder
	var list strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&list, "- [%s](#logtally-%s): %s\n", c.name, c.name, firstSentence(c.summary))
	}
	fmt.Fprintf(&b, commandsDocIntro, list.String())
	for _, c := range commands {
		fmt.Fprintf(&b, "\n## logtally %s\n\n```\n%s\n```\n\n%s\n", c.name, c.synopsis, c.summary)
		fs := c.flags()
		if !hasFlags(fs) {
			b.WriteString("\nIt has no flags.\n")
			continue
		}
		b.WriteString("\n| Flag | Type | Default | Environment | Description |\n|---|---|---|---|---|\n")
		fs.VisitAll(func(f *flag.Flag) {
			typ := flagType(f)
			if isBoolFlag(f) {
				typ = "bool"
			}
			def := ""
			if f.DefValue != "" && f.DefValue != "[]" {
				def = "`" + f.DefValue + "`"
			}
			if d, ok := machineDefaults[f.Name]; ok {
				def = d
			}
			_, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(&b, "| `--%s` | %s | %s | `%s` | %s |\n", f.Name, cell(typ), cell(def), envName(f.Name), cell(usage))
		})
	}
	return b.String()
}

// cell escapes s for a cell of a Markdown table.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// firstSentence returns s up to its first full stop.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// TestCommandsDoc: docs/commands.md is what the commands' flags say, so
// that the flag reference cannot drift from the code. With -update, it is
// rewritten.
func TestCommandsDoc(t *testing.T) {
	t.Parallel()
	golden.Check(t, commandsDocPath, []byte(commandsDoc()), *update)
}
