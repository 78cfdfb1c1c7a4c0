package tailer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// TestCheckUnreadable: a file that cannot be read is refused by both checks
// with the fix. Root reads any file, so this runs only as another user.
func TestCheckUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte("x\n"), 0); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func([]string) error{"follow": CheckFollowed, "replay": CheckReplayed} {
		if err := check([]string{path}); !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "adm group") {
			t.Errorf("%s: %v, want permission denied with the fix", name, err)
		}
	}
}
