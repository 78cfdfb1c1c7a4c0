package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time, by deploy/build.sh or the
// Dockerfile: -ldflags "-X main.version=v1.2.3 -X main.commit=abc123".
// Without them, they come from the build information that go install and go
// build record.
var (
	version = ""
	commit  = ""
)

// versionCmd is `logtally version`: it prints the version, commit and Go
// version, for bug reports.
type versionCmd struct{ proc *process }

func (*versionCmd) registerFlags(*flag.FlagSet) {}

func (*versionCmd) check(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("version takes no arguments, got %q", args)
	}
	return nil
}

// Run prints the version line.
func (c *versionCmd) Run(context.Context) error {
	_, err := io.WriteString(c.proc.Stdout, versionLine())
	return err
}

func (*versionCmd) Close() error { return nil }

// versionLine is what `logtally version` prints.
func versionLine() string {
	return fmt.Sprintf("logtally %s (commit %s, %s, %s/%s)\n", buildVersion(), buildCommit(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

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
