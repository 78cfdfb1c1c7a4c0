package replay

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/logtally/logtally"
)

// Summary is what a replay did, as `logtally replay` reports it.
type Summary struct {
	Files    int              // files named
	Lines    int64            // lines read
	Parsed   int64            // lines parsed and counted
	Rejected int64            // lines rejected
	ByReason map[string]int64 // rejected lines by reason
	Elapsed  time.Duration
	// Kept is how many lines the store counted in minutes, hours and days:
	// a line older than a resolution's retention counts only in the
	// coarser ones.
	Kept logtally.Kept
}

// Summary returns what the replayer has done so far as the summary of a
// replay of files that took elapsed.
func (r *Replayer) Summary(files int, elapsed time.Duration) Summary {
	return Summary{Files: files, Lines: r.Lines(), Parsed: r.Parsed(), Rejected: r.Rejected(),
		ByReason: r.RejectedBy(), Elapsed: elapsed}
}

// String renders the summary as replay prints it: one line, then, when
// lines were rejected, one with their reasons, in the order of the reasons'
// names.
func (s Summary) String() string {
	secs := s.Elapsed.Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "replay: %d files, %d lines read, %d parsed, %d rejected in %.2fs (%.0f lines/s)\n",
		s.Files, s.Lines, s.Parsed, s.Rejected, secs, float64(s.Lines)/max(secs, 1e-9))
	if s.Rejected > 0 {
		var parts []string
		for _, reason := range slices.Sorted(maps.Keys(s.ByReason)) {
			if n := s.ByReason[reason]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s: %d", reason, n))
			}
		}
		fmt.Fprintf(&b, "rejected by reason: %s\n", strings.Join(parts, ", "))
	}
	switch k := s.Kept; {
	case k == logtally.Kept{}:
	case k.Minutes == k.Hours && k.Hours == k.Days:
		fmt.Fprintf(&b, "kept: %d lines in minutes, hours and days\n", k.Minutes)
	default:
		fmt.Fprintf(&b, "kept: %d lines in minutes, %d in hours, %d in days (lines older than a resolution's --keep-* span, back from the newest line stored, count only in the coarser ones)\n",
			k.Minutes, k.Hours, k.Days)
	}
	return b.String()
}
