package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplaySaysItMovedTheSets: the first start on a file of schema 5 (the
// storage package's test file) moves its visitor sets into their minutes,
// and the log says how many.
func TestReplaySaysItMovedTheSets(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	f, err := os.Open("../../storage/testdata/v5-sets.db.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "access.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	var logs bytes.Buffer
	m.Stdout, m.Stderr = io.Discard, &logs
	if err := m.ParseFlags([]string{"replay", "--db", db, "--tz", "UTC", empty}); err != nil {
		t.Fatal(err)
	}
	err = m.Run(context.Background())
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, logs.String())
	}
	if got := logs.String(); !strings.Contains(got, "moved into their minutes") || !strings.Contains(got, "sets=") {
		t.Errorf("no line says the sets moved:\n%s", got)
	}
	if strings.Contains(logs.String(), "dropped") {
		t.Errorf("sets dropped from a whole file:\n%s", logs.String())
	}
}
