//go:build !race

package crawler

// sampleEvery: see race_test.go.
const sampleEvery = 1
