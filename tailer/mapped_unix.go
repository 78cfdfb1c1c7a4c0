//go:build unix

package tailer

import (
	"os"
	"runtime/debug"
	"syscall"
)

// pageSize is what a mapping's offset is a multiple of.
var pageSize = os.Getpagesize()

// mapFile maps length bytes of f from offset (a multiple of pageSize),
// read-only.
func mapFile(f *os.File, offset, length int64) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), offset, int(length), syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmap(data []byte) { _ = syscall.Munmap(data) }

// faultsPanic makes a fault of the calling goroutine on a mapped file's
// lost pages a panic (which ReadMapped turns into an error) rather than a
// crash, and returns what restores the setting before.
func faultsPanic() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}
