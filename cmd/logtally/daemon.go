package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// version and commit are set at build time, by deploy/build.sh or the
// Dockerfile: -ldflags "-X main.version=v1.2.3 -X main.commit=abc123".
// Without them, they come from the build information that go install and go
// build record.
var (
	version = ""
	commit  = ""
)

// buildVersion returns the program's version: the one set at build time,
// else the module's (go install ...@v1.2.3), else "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// buildCommit returns the commit the program was built from, "-dirty" if
// the tree had changes, or "unknown".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if rev != "" {
			return rev[:min(len(rev), 12)] + dirty
		}
	}
	return "unknown"
}

// versionLine is what `logtally version` prints.
func versionLine() string {
	return fmt.Sprintf("logtally %s (commit %s, %s, %s/%s)\n", buildVersion(), buildCommit(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// envName is the environment variable that sets a flag: --max-skew is
// LOGTALLY_MAX_SKEW.
func envName(flagName string) string {
	return "LOGTALLY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag that has an environment variable. It runs before
// the command line is parsed, so a flag given there wins.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := lookup(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("$%s=%q (--%s): %s", envName(f.Name), v, f.Name, valueFix(f, err)))
			}
		}
	})
	return errors.Join(errs...)
}

// UsageError is a mistake on the command line or in the environment: a
// flag that does not exist, a value that does not parse or cannot work, a
// missing FILE. The program prints it with a pointer to the help and exits
// with status 2.
type UsageError struct {
	Command string // "run" or "replay"; "" when the command itself is wrong
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

// flagError rewrites an error of the flag package as one line that names
// the flag and says what to write instead. other holds the flags of the
// other command, to tell a flag given to the wrong command.
func flagError(fs, other *flag.FlagSet, err error) error {
	msg := err.Error()
	cmd := strings.TrimPrefix(fs.Name(), "logtally ")
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		switch f := other.Lookup(name); {
		case f != nil:
			return fmt.Errorf("unknown flag --%s: it is a flag of '%s', not of '%s'", name, other.Name(), fs.Name())
		case closest(fs, name) != "":
			return fmt.Errorf("unknown flag --%s: did you mean --%s?", name, closest(fs, name))
		}
		return fmt.Errorf("unknown flag --%s: %s has no such flag", name, cmd)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		if f := fs.Lookup(name); f != nil {
			arg, _ := flag.UnquoteUsage(f)
			return fmt.Errorf("--%s needs a value: --%s %s", name, name, strings.ToUpper(arg))
		}
	}
	if rest, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return fmt.Errorf("bad flag syntax %q: write --name or --name=value", rest)
	}
	// invalid value "V" for flag -NAME: ERR, or invalid boolean value "V" for -NAME: ERR
	if i := strings.Index(msg, " for flag -"); strings.HasPrefix(msg, "invalid value ") && i > 0 {
		return valueError(fs, msg[len("invalid value "):i], msg[i+len(" for flag -"):])
	}
	if i := strings.Index(msg, " for -"); strings.HasPrefix(msg, "invalid boolean value ") && i > 0 {
		return valueError(fs, msg[len("invalid boolean value "):i], msg[i+len(" for -"):])
	}
	return err
}

// valueError is the error of flag NAME in "NAME: ERR" given value.
func valueError(fs *flag.FlagSet, value, nameErr string) error {
	name, cause, _ := strings.Cut(nameErr, ": ")
	f := fs.Lookup(name)
	if f == nil {
		return fmt.Errorf("--%s %s: %s", name, value, cause)
	}
	return fmt.Errorf("--%s %s: %s", name, value, valueFix(f, errors.New(cause)))
}

// valueFix says what a value of flag f must look like, given the error
// setting it returned. The flag package's own types fail with "parse
// error"; the others' errors say it themselves.
func valueFix(f *flag.Flag, err error) string {
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.durationValue":
		return "want a duration such as 90s, 10m or 1h30m"
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "want a whole number"
	case "*flag.boolValue":
		return "want true or false"
	}
	return err.Error()
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

// usageFunc prints a command's flags, each with its default and the
// environment variable that can set it.
func usageFunc(fs *flag.FlagSet, w io.Writer, synopsis string) func() {
	return func() {
		fmt.Fprintf(w, "Usage: %s\n\nFlags (each can also be set by the environment variable shown):\n", synopsis)
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		sort.Strings(names)
		for _, n := range names {
			f := fs.Lookup(n)
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(w, "  --%s %s\n    \t%s", n, name, usage)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "\n    \t$%s\n", envName(n))
		}
	}
}

// LogConfig chooses how the daemon logs.
type LogConfig struct {
	Format string // text or json
	Level  string // debug, info, warn, error
}

// RegisterFlags registers the logging flags on fs.
func (c *LogConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Format, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.Level, "log-level", "info", "least severe level logged: debug, info, warn or error")
}

// Logger returns the configured logger, writing to w.
func (c LogConfig) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", c.Format)
}

// Rescan matches the followed paths and globs again, as SIGHUP asks.
func (m *Main) Rescan() {
	if m.tail != nil {
		m.Logger.Info("re-scanning followed paths")
		m.tail.Rescan()
	}
}
