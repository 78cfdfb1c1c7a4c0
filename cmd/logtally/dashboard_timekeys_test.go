package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logtally/logtally/breakdown"
)

// TestDashboardTimeKeys: the dashboard's heat strip of request times lists
// the request-time breakdown's keys in the order of their bounds, so that
// no bucket goes missing from it.
func TestDashboardTimeKeys(t *testing.T) {
	js, err := os.ReadFile(filepath.Join("..", "..", "api", "web", "dashboard.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`name: "request-time"[^\n]*\n\s*strip: \[([^\]]*)\]`).FindSubmatch(js)
	if m == nil {
		t.Fatal("no request-time panel with a strip in dashboard.js")
	}
	var got []string
	for _, k := range strings.Split(string(m[1]), ",") {
		got = append(got, strings.Trim(strings.TrimSpace(k), `"`))
	}
	if want := breakdown.TimeKeys(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the dashboard's request times %q, want %q", got, want)
	}
}
