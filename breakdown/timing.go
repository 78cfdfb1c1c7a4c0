package breakdown

import "time"

// The request-time breakdown counts requests by how long they took, in
// buckets that grow by about 2.5 each, from what a page served from memory
// takes to what a user stops waiting for. Each key is its bucket's upper
// bound, so a range's keys read as a histogram: the median is the bound at
// which the counts, summed in the order of the bounds, pass half of them.
var timeBounds = [...]struct {
	max time.Duration
	key string
}{
	{10 * time.Millisecond, "10ms"},
	{25 * time.Millisecond, "25ms"},
	{50 * time.Millisecond, "50ms"},
	{100 * time.Millisecond, "100ms"},
	{250 * time.Millisecond, "250ms"},
	{500 * time.Millisecond, "500ms"},
	{time.Second, "1s"},
	{2500 * time.Millisecond, "2.5s"},
	{5 * time.Second, "5s"},
	{10 * time.Second, "10s"},
}

// TimeOver is the request-time key of a request that took more than the
// last bound, 10 s.
const TimeOver = "more"

// TimeKeys returns the request-time keys in the order of their bounds, the
// order a histogram reads them in.
func TimeKeys() []string {
	out := make([]string, 0, len(timeBounds)+1)
	for _, b := range timeBounds {
		out = append(out, b.key)
	}
	return append(out, TimeOver)
}

// timeBucket returns the key of a request that took d.
func timeBucket(d time.Duration) string {
	for _, b := range timeBounds {
		if d <= b.max {
			return b.key
		}
	}
	return TimeOver
}
