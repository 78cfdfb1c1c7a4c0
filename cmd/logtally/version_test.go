package main

import (
	"bytes"
	"context"
	"regexp"
	"runtime"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	want := regexp.MustCompile(`^logtally \S+ \(commit \S+, ` + regexp.QuoteMeta(runtime.Version()) + `, \w+/\w+\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out bytes.Buffer
		m := NewMain()
		m.Stdout, m.Stderr = &out, &out
		if err := m.ParseFlags(args); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if !want.MatchString(out.String()) {
			t.Errorf("%q printed %q, want %s", args, out.String(), want)
		}
	}
}

// TestVersionFromLinker: the build script's -X main.version and
// -X main.commit win over the build information. Not parallel: it sets
// the package's version and commit, which every command reads.
func TestVersionFromLinker(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.3", "abc123def456"
	if got, want := versionLine(), "logtally v1.2.3 (commit abc123def456, "+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")\n"; got != want {
		t.Errorf("versionLine() = %q, want %q", got, want)
	}
}
