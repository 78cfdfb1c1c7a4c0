package poll

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilReturnsOnceTrue(t *testing.T) {
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			n.Add(1)
		}
	}()
	looks := 0
	Until(t, "five", func() bool { looks++; return n.Load() == 5 })
	<-done
	if looks == 0 {
		t.Error("cond never called")
	}
}

// fakeTB records a failure instead of ending the test, so the test can
// check that Until fails; Fatalf stops Until's goroutine as testing's does.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestUntilFailsSayingWhat(t *testing.T) {
	f := &fakeTB{TB: t}
	looks := 0
	func() {
		defer func() {
			if r := recover(); r != f {
				panic(r)
			}
		}()
		until(f, 30*time.Millisecond, "never", func() bool { looks++; return false })
	}()
	if want := "timed out after 30ms waiting for never"; f.msg != want {
		t.Errorf("failure %q, want %q", f.msg, want)
	}
	if looks < 2 {
		t.Errorf("cond called %d times in 30ms, want it called again after a miss", looks)
	}
}
