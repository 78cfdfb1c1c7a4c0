//go:build !linux

package window

// threadCPU is not measured on this system.
func threadCPU() int64 { return 0 }
