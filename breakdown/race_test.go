//go:build race

package breakdown

// floodLines is how many lines of distinct agents, referrers and networks
// TestFloodBounded derives: under the race detector, which this
// goroutine-free code does not need, a tenth of the million, still 24
// times what the caches hold.
const floodLines = 100_000
