package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name, want, got, diff string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line changed", "a\nb\nc", "a\nx\nc", "line 2:\n  want b\n  got  x\n"},
		{"a line more", "a", "a\nb", "line 2:\n  want \n  got  b\n"},
		{"a line less", "a\nb", "a", "line 2:\n  want b\n  got  \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff(tt.want, tt.got); got != tt.diff {
				t.Errorf("Diff(%q, %q) = %q, want %q", tt.want, tt.got, got, tt.diff)
			}
		})
	}
}

// TestCheck: with update, Check writes the file and passes; without, it
// passes on the same output and fails on another.
func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	Check(t, path, []byte("a\nb\n"), true)
	if data, err := os.ReadFile(path); err != nil || string(data) != "a\nb\n" {
		t.Fatalf("after update the file holds %q, %v", data, err)
	}
	Check(t, path, []byte("a\nb\n"), false)
	other := &failures{TB: t}
	Check(other, path, []byte("a\nx\n"), false)
	if other.errors != 1 {
		t.Errorf("Check on output that differs from its golden file failed %d times, want once", other.errors)
	}
}

// failures counts the errors reported to it instead of failing the test.
type failures struct {
	testing.TB
	errors int
}

func (f *failures) Helper()                        {}
func (f *failures) Errorf(format string, a ...any) { f.errors++ }
