//go:build race

package crawler

// sampleEvery is how many agents the reference tests skip for one they
// check: the reference's 1,450 regular expressions an agent take minutes
// under the race detector, which this package's goroutine-free code does
// not need.
const sampleEvery = 16
