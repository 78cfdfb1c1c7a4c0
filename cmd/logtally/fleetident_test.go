package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/fleet"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
)

// identNode is one node of the identity tests: a log, a database and the
// flags it runs with.
type identNode struct {
	t       *testing.T
	log, db string
	name    string
	now     time.Time // the first line's time
}

func newIdentNode(t *testing.T, name string) *identNode {
	dir := t.TempDir()
	return &identNode{t: t, log: filepath.Join(dir, "access.log"), db: filepath.Join(dir, "logtally.db"), name: name,
		now: time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Minute)}
}

// write appends lines from to to the log, one a second.
func (n *identNode) write(from, to int) {
	for i := from; i < to; i++ {
		appendLines(n.t, n.log, line(fmt.Sprintf("192.0.2.%d", i%200),
			n.now.Add(time.Duration(i)*time.Second).Format("02/Jan/2006:15:04:05 -0700"), "GET /p HTTP/1.1", 200, browser))
	}
}

func (n *identNode) args(url string, extra ...string) []string {
	return append([]string{"run", "--fleet", url, "--visitor-secret-file", secretFile(n.t), "--node", n.name, "--db", n.db, "--admin-listen", "127.0.0.1:0",
		"--flush-interval", "10ms", "--fleet-refresh", "50ms", "--tz", "UTC", "--cache-max-age", "0", n.log}, extra...)
}

// total returns the requests of m's hourly series in scope (fleet or node).
func (n *identNode) total(m *Main, scope string) int64 {
	n.t.Helper()
	_, body := get(n.t, m, fmt.Sprintf("/api/v1/series?from=%d&to=%d&step=1h&scope=%s",
		n.now.Add(-time.Hour).Unix(), n.now.Add(2*time.Hour).Unix(), scope))
	var s api.SeriesBody
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return -1 // the fleet's history before it is reached
	}
	var sum int64
	for _, p := range s.Points {
		sum += p.Requests
	}
	return sum
}

// counted waits until m has counted want lines itself and, with shipping
// on, shipped every batch.
func (n *identNode) counted(m *Main, want int64, shipping bool) {
	n.t.Helper()
	poll.Until(n.t, fmt.Sprintf("%d lines counted", want), func() bool {
		if n.total(m, "node") != want {
			return false
		}
		st := m.run().node.Stats()
		return !shipping || st.State == fleet.StateShipping && st.Outbox.Entries == 0
	})
}

// unreachableURL is a fleet URL on which nothing listens.
func unreachableURL(t *testing.T) string {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer closed.Close()
	return fmt.Sprintf("postgres://postgres@%s/postgres?connect_timeout=1", closed.Addr())
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFleetRestoredDatabase: a node's local database is restored from a
// backup made before its last shipments, and the node restarts cut off
// from PostgreSQL, counting again lines the fleet has. Once it reaches the
// fleet it takes the fleet's read positions: the fleet counts every line
// once.
func TestFleetRestoredDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	n := newIdentNode(t, "restored")
	restoreBackup(t, n, url)
	n.write(200, 250)
	m := start(t, time.Now, n.args(unreachableURL(t))...)
	n.counted(m, 250, false) // 100 from the backup, 150 read again
	m.Close()

	m = start(t, time.Now, n.args(url)...)
	poll.Until(t, "the fleet to count every line", func() bool {
		st := m.run().node.Stats()
		return n.total(m, "fleet") >= 250 && st.State == fleet.StateShipping && st.Outbox.Entries == 0
	})
	if got := n.total(m, "fleet"); got != 250 {
		t.Errorf("the fleet counts %d requests, want 250", got)
	}
	day := n.now.Truncate(24 * time.Hour)
	code, body := get(t, m, fmt.Sprintf("/api/v1/pages?from=%s&to=%s", day.Format(time.RFC3339), day.Add(48*time.Hour-time.Second).Format(time.RFC3339)))
	var pages api.PagesRange
	if err := json.Unmarshal([]byte(body), &pages); code != 200 || err != nil || !pages.Exact || len(pages.Pages) != 1 || pages.Pages[0].PageViews != 250 {
		t.Errorf("the fleet's pages of two days = %d %s, want /p with 250 page views, exact", code, body)
	}
}

// TestFleetNameTakenAndTakeOver: a second database started under a name
// another database holds is refused, naming the fix; started with
// --fleet-take-over it takes that node's place and read positions, and the
// fleet counts each line once.
func TestFleetNameTakenAndTakeOver(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	first := newIdentNode(t, "web1")
	first.write(0, 80)
	m := start(t, time.Now, first.args(url)...)
	first.counted(m, 80, true)

	second := &identNode{t: t, log: first.log, db: filepath.Join(t.TempDir(), "new.db"), name: "web1", now: first.now}
	other := NewMain()
	var stderr syncBuffer
	other.Stdout, other.Stderr = &stderr, &stderr
	if err := other.ParseFlags(second.args(url)); err != nil {
		t.Fatal(err)
	}
	err := other.Run(context.Background())
	other.Close()
	if err == nil || !strings.Contains(err.Error(), "held by another database") || !strings.Contains(err.Error(), "--fleet-take-over") {
		t.Fatalf("a second database under a taken name: %v, want it refused with the fix", err)
	}
	m.Close() // the first database is lost

	first.write(80, 120)
	m = start(t, time.Now, second.args(url, "--fleet-take-over")...)
	poll.Until(t, "the fleet to count every line", func() bool {
		st := m.run().node.Stats()
		return first.total(m, "fleet") >= 120 && st.State == fleet.StateShipping && st.Outbox.Entries == 0
	})
	if got := first.total(m, "fleet"); got != 120 {
		t.Errorf("the fleet counts %d requests, want 120", got)
	}
}

// TestFleetRestoredDatabaseNewFile restores a node's database and starts
// it cut off from the fleet, reading a log rotated (by rename) after the
// fleet's last batch of the node: the fleet holds no position of the new
// file, so it is read again from its start, and the fleet counts each of
// its lines once.
func TestFleetRestoredDatabaseNewFile(t *testing.T) {
	url := pgtest.Database(t)
	n := newIdentNode(t, "restored")
	restoreBackup(t, n, url)
	if err := os.Rename(n.log, n.log+".1"); err != nil { // rotated: a new log
		t.Fatal(err)
	}
	n.write(200, 250)
	m := start(t, time.Now, append(n.args(unreachableURL(t)), n.log+".1")...)
	n.counted(m, 250, false)
	m.Close()

	m = start(t, time.Now, append(n.args(url), n.log+".1")...)
	poll.Until(t, "the node to ship the new file's lines", func() bool {
		st := m.run().node.Stats()
		return st.State == fleet.StateShipping && st.Outbox.Entries == 0 && n.total(m, "fleet") >= 250
	})
	if got := n.total(m, "fleet"); got != 250 {
		t.Errorf("the fleet counts %d requests, want 250", got)
	}
}

// restoreBackup ships n's first 100 lines, backs its database up, ships
// 100 more, and puts the backup back: a database behind the fleet.
func restoreBackup(t *testing.T, n *identNode, url string) {
	t.Helper()
	n.write(0, 100)
	m := start(t, time.Now, n.args(url)...)
	n.counted(m, 100, true)
	m.Close()
	copyFile(t, n.db, n.db+".backup")
	n.write(100, 200)
	m = start(t, time.Now, n.args(url)...)
	n.counted(m, 200, true)
	m.Close()
	copyFile(t, n.db+".backup", n.db)
}
