package golden

import "testing"

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
