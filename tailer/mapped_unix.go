//go:build unix

package tailer

import (
	"os"
	"runtime/debug"
	"syscall"
)

// mapFile maps the first size bytes of f, read-only, for a read from start
// to end.
func mapFile(f *os.File, size int64) ([]byte, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_ = syscall.Madvise(data, syscall.MADV_SEQUENTIAL) // a hint: read ahead, drop behind
	return data, nil
}

func unmap(data []byte) { _ = syscall.Munmap(data) }

// faultsPanic makes a fault of the calling goroutine on a mapped file's
// lost pages a panic (which RecoverTruncated turns into an error) rather
// than a crash, and returns what restores the setting before.
func faultsPanic() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}
