// Package golden compares a test's output with its golden file in a form a
// reader can act on: the lines that differ, by number, rather than two
// blobs. Tests keep their golden files in testdata/ and rewrite them with
// -update.
package golden

import (
	"strconv"
	"strings"
)

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
