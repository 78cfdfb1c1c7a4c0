package tailer

import (
	"os"
	"path/filepath"
	"testing"
)

// TestChunkPattern: each chunk says which of the followed or replayed
// patterns matched its file, a rotated copy of a plain path that path's.
func TestChunkPattern(t *testing.T) {
	dir := t.TempDir()
	blog := filepath.Join(dir, "blog.log")
	shop := filepath.Join(dir, "shop", "a.log")
	if err := os.Mkdir(filepath.Dir(shop), 0o755); err != nil {
		t.Fatal(err)
	}
	appendFile(t, blog, lines(0, 10))
	appendFile(t, shop, lines(10, 20))
	check := func(s *sink, want func(i int) int) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, l := range lines(0, 30) {
			if got, ok := s.pattern[l]; !ok || got != want(i) {
				t.Errorf("line %q came with pattern %d (%v), want %d", l, got, ok, want(i))
			}
		}
	}

	s := newSink()
	r := follow(t, testConfig, s, blog, filepath.Join(dir, "shop", "*.log"))
	r.waitFor(20)
	r.stop()
	// Rotated while stopped: the copy is read as the plain path's.
	if err := os.Rename(blog, blog+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, blog+".1", lines(20, 25))
	appendFile(t, blog, lines(25, 30))
	r = follow(t, testConfig, s, blog, filepath.Join(dir, "shop", "*.log"))
	r.waitFor(30)
	r.stop()
	check(s, func(i int) int {
		if i >= 10 && i < 20 {
			return 1
		}
		return 0
	})

	s = newSink()
	if err := replay(t, s, blog+".1", shop, blog); err != nil {
		t.Fatal(err)
	}
	check(s, func(i int) int { return []int{0, 1, 0, 2}[min(i/10, 2)+boolInt(i >= 25)] })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
