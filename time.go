package logtally

// FloorDiv divides rounding towards minus infinity, so that a time before
// 1970 falls in the minute, hour or day that contains it.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
