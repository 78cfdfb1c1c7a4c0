package tailer

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckFollowed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "access.log")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		ok   bool
	}{
		{"existing file", file, true},
		{"file not yet written", filepath.Join(dir, "later.log"), true},
		{"glob", filepath.Join(dir, "access.log*"), true},
		{"directory", dir, false},
		{"missing directory", filepath.Join(dir, "nope", "access.log"), false},
		{"glob in a missing directory", filepath.Join(dir, "nope", "*.log"), false},
		{"bad glob", filepath.Join(dir, "[.log"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckFollowed([]string{tt.path}); (err == nil) != tt.ok {
				t.Errorf("CheckFollowed(%s) = %v, want ok %v", tt.path, err, tt.ok)
			}
		})
	}
	if err := CheckReplayed([]string{file}); err != nil {
		t.Errorf("CheckReplayed(existing) = %v", err)
	}
	if err := CheckReplayed([]string{file, filepath.Join(dir, "acess.log")}); err == nil {
		t.Error("CheckReplayed(missing) = nil")
	}
}
