package window

import "syscall"

// threadCPU returns the CPU time the calling thread has used, in
// nanoseconds. Benchmarks lock their goroutine to its thread and report
// cpu-ns/op beside ns/op: on a machine shared with other work, ns/op also
// counts the time the thread waited for a core.
func threadCPU() int64 {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
