package main

import (
	"flag"
	"fmt"
	"strings"
)

// parseArgs sets the flags of fs that args give, and returns the other
// arguments, in order. As GNU tools do, flags may come after the other
// arguments (logtally run access.log --site x=y), and -- ends the flags:
// what follows it is taken as it is, even if it starts with a dash. A lone
// - is an argument.
//
// It uses the flag package for its values only (FlagSet.Lookup and Set), so
// each error it returns is written here or by the flag's own value, and
// names the flag: none is the flag package's English to rewrite. A flag fs
// does not have is an *unknownFlagError; -h and --help, unless fs has them,
// are flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) (rest []string, err error) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(rest, args[i+1:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			rest = append(rest, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(arg[1:], "-"), "=")
		if name == "" || name[0] == '-' {
			return nil, fmt.Errorf("bad flag syntax %q: write --name or --name=value", arg)
		}
		f := fs.Lookup(name)
		switch {
		case f == nil && (name == "h" || name == "help"):
			return nil, flag.ErrHelp
		case f == nil:
			return nil, &unknownFlagError{name}
		case !hasValue && isBoolFlag(f):
			value = "true"
		case !hasValue && i+1 < len(args):
			i++
			value = args[i]
		case !hasValue:
			return nil, fmt.Errorf("--%s needs a value: --%s %s", name, name, strings.ToUpper(flagType(f)))
		}
		if err := fs.Set(name, value); err != nil {
			return nil, fmt.Errorf("--%s %q: %w", name, value, err)
		}
	}
	return rest, nil
}

// isBoolFlag reports whether f is a switch: given alone, it means true.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// unknownFlagError is a flag the command does not have.
type unknownFlagError struct{ name string }

func (e *unknownFlagError) Error() string { return "unknown flag --" + e.name }

// explain says what was meant by a flag fs does not have: a flag of the
// command other (a flag given to the wrong command), or one of fs's own
// with a name near enough to be a typo.
func (e *unknownFlagError) explain(fs *flag.FlagSet, other string) error {
	if other != "" {
		spec, _ := lookupCommand(other)
		if spec.flags().Lookup(e.name) != nil {
			return fmt.Errorf("%v: it is a flag of 'logtally %s', not of '%s'", e, other, fs.Name())
		}
	}
	if near := closest(fs, e.name); near != "" {
		return fmt.Errorf("%v: did you mean --%s?", e, near)
	}
	return fmt.Errorf("%v: %s has no such flag", e, strings.TrimPrefix(fs.Name(), "logtally "))
}
