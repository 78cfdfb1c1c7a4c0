package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestServesWhatTheDatabaseHolds: run serves what the database holds,
// whatever the flags of the commands that wrote it. A database replayed
// with sites, served without --site-field, lists its sites and counts
// them in the window, and with --window-end log a series asked for no
// range is the last hour of the log, not of the clock; an empty database
// with --window-end log has the clock's window, not one of 1970.
func TestServesWhatTheDatabaseHolds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC) // six days after the logs
	clock := func() time.Time { return now }
	dir := t.TempDir()
	vhosts := filepath.Join(root, "testdata", "vhosts.log")

	t.Run("empty", func(t *testing.T) {
		m := start(t, clock, "run", "--db", filepath.Join(dir, "empty.db"), "--admin-listen", "127.0.0.1:0", "--window-end", "log")
		if s := stats(t, m); !s.To.Equal(now.Add(time.Second)) || s.Requests != 0 {
			t.Errorf("stats of an empty database = %+v, want the clock's window, to %s", s, now.Add(time.Second))
		}
		if s := series(t, m, ""); !s.To.Equal(now.Add(time.Second)) {
			t.Errorf("series of an empty database to %s, want the window's end %s", s.To, now.Add(time.Second))
		}
	})

	t.Run("sites", func(t *testing.T) {
		db := filepath.Join(dir, "sites.db")
		replayLogs(t, "--db", db, "--format", "vhost_combined", "--site-field", "%v", vhosts)
		// A replay without --site-field counts under default, and in the
		// all-sites view too.
		replayLogs(t, "--db", db, "--format", "vhost_combined", filepath.Join(root, "testdata", "shop.log"))
		m := start(t, clock, "run", "--db", db, "--admin-listen", "127.0.0.1:0", "--window-end", "log",
			"--format", "vhost_combined")
		var sites struct{ Sites []struct{ Site string } }
		_, body := get(t, m, "/api/v1/sites")
		if err := json.Unmarshal([]byte(body), &sites); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range sites.Sites {
			names = append(names, s.Site)
		}
		if len(names) != 4 || !slices.Contains(names, "blog.example.org") || !slices.Contains(names, "default") {
			t.Errorf("sites = %v, want the three of the log and default", names)
		}
		s := stats(t, m)
		if s.Requests != 80 {
			t.Errorf("stats = %+v, want the logs' 80 requests", s)
		}
		se := series(t, m, "")
		var requests int64
		for _, p := range se.Points {
			requests += p.Requests
		}
		if !se.To.Equal(s.To) || requests != 80 {
			t.Errorf("series to %s with %d requests, want to the window's end %s with all 80", se.To, requests, s.To)
		}
	})
}
