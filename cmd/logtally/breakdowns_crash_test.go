package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/internal/poll"
)

// TestBreakdownsAfterSIGKILL: a real `logtally run` in a child process,
// counting every breakdown, is killed with SIGKILL while it counts, again
// and again as its log grows, and started again each time; then each
// breakdown's window, day and range answer as a brute-force count of the
// log and as a run that was never killed: nothing lost, nothing counted
// twice. Half the lives are killed once they have read lines of their part
// of the log (before those are committed, mostly), half once they have
// committed some of it with more to come (--flush-lines 40).
//
// The log ends at the last second of a minute: a window restored with
// --window-end log ends at the last second of the newest stored minute
// (live.Restore), which is where the uninterrupted run's ends only then.
func TestBreakdownsAfterSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	end := time.Now().UTC().Truncate(time.Minute).Add(-time.Second)
	lines := breakdownLog(end)
	all := texts(lines)
	log, mmdb := filepath.Join(dir, "access.log"), countryMMDB(t, dir)
	args := func(db string) []string {
		return []string{"--db", filepath.Join(dir, db), "--window-end", "log", "--tz", "UTC", "--flush-lines", "40",
			"--breakdowns", allBreakdowns, "--geoip", mmdb, "--own-hosts", "example.com", log}
	}
	appendLines(t, log)
	const lives = 8 // the last one is not killed
	written := 0
	for life := range lives {
		d := startDaemon(t, strings.Join(args("db"), " "))
		next := (life + 1) * len(lines) / lives
		appendLines(t, log, all[written:next]...)
		written = next
		if life == lives-1 {
			// And once more, killed after it committed everything.
			waitBreakdowns(t, d.base(), lines, end)
			d.stop(syscall.SIGKILL)
			break
		}
		var st api.Status
		poll.Until(t, "the daemon to count", func() bool {
			if getURL(t, d.base()+"/api/v1/status", &st) != 200 || st.Lines.Read == 0 {
				return false
			}
			return life%2 == 0 || st.Store.Commits > 0
		})
		d.stop(syscall.SIGKILL)
		t.Logf("life %d killed: %d lines read, %d commits, %d lines written in all", life, st.Lines.Read, st.Store.Commits, written)
		if t.Failed() {
			return
		}
	}
	d := startDaemon(t, strings.Join(args("db"), " "))
	waitBreakdowns(t, d.base(), lines, end)
	whole := start(t, time.Now, append([]string{"run", "--admin-listen", "127.0.0.1:0"}, args("db2")...)...)
	waitBreakdowns(t, mainURL(whole), lines, end)
	checkBreakdowns(t, lines, end, d.base(), mainURL(whole))
}
