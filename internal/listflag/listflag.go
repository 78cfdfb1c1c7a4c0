// Package listflag is a comma-separated list as a flag's value, so that
// the packages whose Config takes lists of words (methods, extensions,
// agents, breakdowns, hosts) parse them alike.
package listflag

import "strings"

// List is a comma-separated list flag: `--flag a,b` is [a b], blanks around
// the commas and empty words dropped. Setting it replaces the default
// rather than adding to it, so a flag given on the command line says the
// whole list.
type List []string

// String returns the list as it is written on a command line.
func (l *List) String() string { return strings.Join(*l, ",") }

// Set replaces the list with the words of s.
func (l *List) Set(s string) error {
	*l = nil
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l = append(*l, f)
		}
	}
	return nil
}
