package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// UsageError is a mistake on the command line or in the environment: a
// flag that does not exist, a value that does not parse or cannot work, a
// missing FILE. The program prints it with a pointer to the help and exits
// with status 2.
type UsageError struct {
	Command string // "run", "replay", ...; "" when the command itself is wrong
	Err     error
}

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

// Help returns where the help for the command is.
func (e *UsageError) Help() string {
	if e.Command == "" {
		return "see 'logtally --help'"
	}
	return "see 'logtally " + e.Command + " --help'"
}

// printFlags prints a command's help: its usage line, then its flags in
// the order of their names, each with its default and the environment
// variable that can set it.
func printFlags(w io.Writer, synopsis string, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n", synopsis)
	if !hasFlags(fs) {
		return
	}
	fmt.Fprintf(w, "\nFlags (each can also be set by the environment variable shown):\n")
	fs.VisitAll(func(f *flag.Flag) {
		_, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n    \t%s", f.Name, flagType(f), usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "\n    \t$%s\n", envName(f.Name))
	})
}

// hasFlags reports whether fs has any flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// flagType is what a flag's value is, as its help names it: the word in
// backquotes in its usage, else its value's type; empty for a switch.
func flagType(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	if t, ok := f.Value.(typeNamer); ok && !strings.Contains(f.Usage, "`") {
		return t.typeName()
	}
	return name
}

// closest returns the flag of fs whose name is nearest to name, if one is
// near enough to be a typo.
func closest(fs *flag.FlagSet, name string) string {
	best, bestDist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestDist || (strings.HasPrefix(f.Name, name) && len(name) >= 3 && best == "") {
			best, bestDist = f.Name, min(d, bestDist)
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
