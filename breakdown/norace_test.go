//go:build !race

package breakdown

// floodLines: see race_test.go.
const floodLines = 1_000_000
