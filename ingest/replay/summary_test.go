package replay

import (
	"context"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
)

func TestSummaryString(t *testing.T) {
	tests := []struct {
		name string
		s    Summary
		want string
	}{
		{"nothing rejected", Summary{Files: 1, Elapsed: time.Millisecond},
			"replay: 1 files, 0 lines read, 0 parsed, 0 rejected in 0.00s (0 lines/s)\n"},
		{"rejected", Summary{Files: 2, Lines: 400, Parsed: 396, Rejected: 4, Elapsed: 2 * time.Second,
			ByReason: map[string]int64{"line too long": 1, "line does not match format": 3, "other": 0}},
			"replay: 2 files, 400 lines read, 396 parsed, 4 rejected in 2.00s (200 lines/s)\n" +
				"rejected by reason: line does not match format: 3, line too long: 1\n"},
		{"kept everywhere", Summary{Files: 1, Lines: 10, Parsed: 10, Elapsed: time.Second, Kept: logtally.Kept{Minutes: 10, Hours: 10, Days: 10}},
			"replay: 1 files, 10 lines read, 10 parsed, 0 rejected in 1.00s (10 lines/s)\n" +
				"kept: 10 lines in minutes, hours and days\n"},
		{"older than minutes", Summary{Files: 1, Lines: 10, Parsed: 10, Elapsed: time.Second, Kept: logtally.Kept{Minutes: 4, Hours: 10, Days: 10}},
			"replay: 1 files, 10 lines read, 10 parsed, 0 rejected in 1.00s (10 lines/s)\n" +
				"kept: 4 lines in minutes, 10 in hours, 10 in days (lines older than a resolution's --keep-* span, back from the newest line stored, count only in the coarser ones)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.String(); got != tt.want {
				t.Errorf("String() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestSummaryOfReplay: the summary counts what the replayer did.
func TestSummaryOfReplay(t *testing.T) {
	r, _ := newReplayer(t, Config{})
	if err := r.Replay(context.Background(), ingesttest.Feed(ingesttest.Chunks(5_000, 4096)...)); err != nil {
		t.Fatal(err)
	}
	s := r.Summary(2, time.Second)
	var byReason int64
	for _, n := range s.ByReason {
		byReason += n
	}
	// Chunks makes every 50th line bad.
	if s.Files != 2 || s.Lines != 5_000 || s.Rejected != 100 || s.Parsed != 4_900 || byReason != 100 ||
		s.Elapsed != time.Second {
		t.Errorf("Summary = %+v; want 2 files, 5000 lines, 4900 parsed, 100 rejected", s)
	}
}
