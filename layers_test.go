package logtally_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/logtally/logtally"

// deps returns every import path that pkg (a directory relative to the
// module root) links, following the module's own packages transitively. Test
// files are not counted: they may use whatever they check against.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		p, err := build.ImportDir(filepath.Join(".", dir), 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range p.Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if imp == module {
				visit(".")
			} else if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				visit(rest)
			}
		}
	}
	visit(pkg)
	out := make([]string, 0, len(seen))
	for imp := range seen {
		out = append(out, imp)
	}
	slices.Sort(out)
	return out
}

// TestImportLayers keeps the imports running one way, by layer: the domain
// package imports nothing of ours; parsing and counting know nothing of
// storage; storage knows nothing of parsing or the window; the API knows
// only the domain types and what it reads through small interfaces.
func TestImportLayers(t *testing.T) {
	tests := []struct {
		pkg       string
		forbidden []string // import paths, or prefixes ending in "/"
	}{
		{".", []string{module + "/"}},
		{"tally", []string{module + "/parser", module + "/classify", module + "/window", module + "/storage", module + "/tailer", module + "/ingest", module + "/api", module + "/fleet", module + "/counter", "go.etcd.io/bbolt"}},
		{"parser", []string{module + "/", "go.etcd.io/bbolt"}},
		{"keyring", []string{module + "/", "go.etcd.io/bbolt"}},
		{"classify", []string{module + "/window", module + "/storage", module + "/ingest", module + "/api", module + "/tailer", "go.etcd.io/bbolt"}},
		{"window", []string{module + "/parser", module + "/classify", module + "/storage", module + "/tailer", "github.com/satyrius/gonx", "go.etcd.io/bbolt"}},
		{"tailer", []string{module + "/parser", module + "/classify", module + "/window", module + "/storage", module + "/ingest", module + "/api", "go.etcd.io/bbolt"}},
		{"storage", []string{module + "/parser", module + "/classify", module + "/window", module + "/tailer", module + "/ingest", module + "/api", "github.com/satyrius/gonx"}},
		// The core of ingest is shared by the live loop and replay: it
		// keeps no window (the live loop's) and commits through an
		// interface. Replay links no window; neither loop links the store.
		{"ingest", []string{module + "/api", module + "/storage", module + "/window", "go.etcd.io/bbolt"}},
		{"ingest/live", []string{module + "/api", module + "/storage", module + "/ingest/replay", "go.etcd.io/bbolt"}},
		{"ingest/replay", []string{module + "/api", module + "/storage", module + "/window", module + "/ingest/live", "go.etcd.io/bbolt"}},
		{"counter", []string{module + "/"}},
		{"crawler", []string{module + "/"}},
		// Breakdowns are derived from a parsed line: the domain and the
		// parser's Record, nothing that counts, stores or serves them.
		{"breakdown", []string{module + "/tally", module + "/classify", module + "/crawler", module + "/counter", module + "/keyring",
			module + "/window", module + "/storage", module + "/tailer", module + "/ingest", module + "/fleet", module + "/api",
			module + "/report", module + "/status", module + "/internal/loggen", module + "/internal/waker", "go.etcd.io/bbolt"}},
		{"fleet", []string{module + "/parser", module + "/classify", module + "/window", module + "/tailer", module + "/storage", module + "/ingest", module + "/api", "go.etcd.io/bbolt"}},
		{"status", []string{module + "/storage", "go.etcd.io/bbolt"}},
		{"report", []string{module + "/classify", module + "/storage", module + "/window", module + "/parser", module + "/ingest", module + "/tailer", module + "/api", "go.etcd.io/bbolt", "github.com/satyrius/gonx"}},
		{"api", []string{module + "/classify", module + "/storage", module + "/fleet", module + "/window", module + "/parser", module + "/ingest", module + "/tailer", "go.etcd.io/bbolt", "github.com/satyrius/gonx"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			for _, d := range deps(t, tt.pkg) {
				for _, f := range tt.forbidden {
					if d == f || strings.HasSuffix(f, "/") && strings.HasPrefix(d, f) || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s links %s", tt.pkg, d)
					}
				}
			}
		})
	}
}
