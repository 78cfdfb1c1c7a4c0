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
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
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
