// Package golden compares a test's output with its golden file in a form a
// reader can act on: the lines that differ, by number, rather than two
// blobs. Tests keep their golden files in testdata/ and rewrite them with
// -update.
package golden

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Check compares got with the golden file at path, and fails tb with the
// lines that differ. With update (each test package's -update flag, which
// this package leaves to it, as a flag may be defined once) it first
// rewrites the file with got, so a test reads back what it wrote.
func Check(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (write it with go test -update)", err)
	}
	if d := Diff(string(want), string(got)); d != "" {
		tb.Errorf("%s differs; rewrite it with go test -update if the change is right:\n%s", path, d)
	}
}

// Diff returns the lines of want and got that differ, each with its line
// number, or "" if they are equal.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want " + wl + "\n  got  " + gl + "\n")
		}
	}
	return b.String()
}
