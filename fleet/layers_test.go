package fleet

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestImports keeps fleet where it belongs among logtally's layers, beside
// storage: it knows the domain types and PostgreSQL, nothing of parsing,
// counting, reading logs, the local store or the API.
func TestImports(t *testing.T) {
	const module = "github.com/logtally/logtally"
	seen := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range p.Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if imp == module {
				visit("..")
			} else if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				visit(filepath.Join("..", rest))
			}
		}
	}
	visit(".")
	for imp := range seen {
		if strings.HasPrefix(imp, module+"/") || imp == "go.etcd.io/bbolt" || imp == "github.com/satyrius/gonx" {
			t.Errorf("fleet links %s", imp)
		}
	}
}
