package breakdown

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time of the calling thread so far, and locks
// the goroutine to it; a benchmark measured by it does not count the time
// the thread waits for a core that other processes hold, so its figures
// hold on a busy machine.
func threadCPU() time.Duration {
	runtime.LockOSThread()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
