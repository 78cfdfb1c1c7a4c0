package main

import (
	"context"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
)

// TestBreakdownsFleet: two `logtally run --fleet` processes, each following
// every other line of the generated log, count every breakdown and ship
// them to one fleet database. Breakdowns are answered for the node alone,
// as named counters are (docs/fleet.md): each node's answers equal a
// brute-force count of its own lines. The fleet database holds each
// breakdown's keys per day, summed over the nodes, and its requests per
// day, as a brute-force count of the whole log gives them; node b was
// killed with SIGKILL while it counted, and started again.
func TestBreakdownsFleet(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	dir := t.TempDir()
	end := time.Now().UTC().Truncate(time.Second)
	lines := breakdownLog(end)
	extra := strings.Join([]string{"--breakdowns", allBreakdowns, "--geoip", countryMMDB(t, dir), "--own-hosts", "example.com"}, " ")
	var nodes []*fleetNode
	halves := make([][]bdLine, 2)
	for i, name := range []string{"a", "b"} {
		n := &fleetNode{t: t, name: name, url: url, log: filepath.Join(dir, name+".log"), db: filepath.Join(dir, name+".db"), extra: extra}
		var data []byte
		for j := i; j < len(lines); j += 2 {
			halves[i] = append(halves[i], lines[j])
			data = append(data, lines[j].text+"\n"...)
		}
		t.Cleanup(func() { n.signal(syscall.SIGTERM) })
		if name == "b" {
			// Node b is killed while it counts the first half of its lines,
			// and started again to count them and the rest.
			part := len(halves[i]) / 2
			cut := len(strings.Join(texts(halves[i][:part]), "\n")) + 1
			n.write(data[:cut])
			n.start()
			poll.Until(t, "node b to read", func() bool {
				var st api.Status
				code, err := n.get("/api/v1/status", &st)
				return err == nil && code == http.StatusOK && st.Lines.Read > 0
			})
			n.signal(syscall.SIGKILL)
			data = data[cut:]
		}
		n.write(data)
		n.start()
		nodes = append(nodes, n)
	}
	for i, n := range nodes {
		waitBreakdowns(t, n.d.base(), halves[i], end)
		poll.Until(t, "node "+n.name+" to ship everything", func() bool {
			st := n.fleetStatus()
			return st != nil && st.State == "shipping" && st.AckedSeq > 0 && st.PendingBatches == 0
		})
	}
	// As a named counter, a breakdown has no fleet's answer to ask for.
	if code, err := nodes[0].get("/api/v1/breakdowns/status?scope=fleet", nil); err != nil || code != http.StatusBadRequest {
		t.Errorf("a breakdown with ?scope=fleet: %d %v, want 400", code, err)
	}
	first, last := bdDays(end)
	for _, name := range strings.Split(allBreakdowns, ",") {
		t.Run(name, func(t *testing.T) {
			for i, n := range nodes {
				got, a, _ := breakdownAnswer(t, n.d.base(), name, "&from="+first.Format(time.DateOnly)+"&to="+last.Format(time.DateOnly))
				if want := countsOnly(bruteForce(halves[i], name, a.From, a.To)); !maps.Equal(got, want) {
					t.Errorf("node %s's range: got %v\nwant %v", n.name, got, want)
				}
			}
			for day := first; !day.After(last); day = day.AddDate(0, 0, 1) {
				want := countsOnly(bruteForce(lines, name, day, day.Add(24*time.Hour-time.Second)))
				var requests int64
				for _, c := range want {
					requests += c.count
				}
				keys, gotRequests := fleetBreakdownDay(t, url, name, day)
				if !maps.Equal(keys, want) {
					t.Errorf("the fleet's keys on %s: got %v\nwant %v", day.Format(time.DateOnly), keys, want)
				}
				if gotRequests != requests {
					t.Errorf("the fleet's requests on %s: got %d, want %d", day.Format(time.DateOnly), gotRequests, requests)
				}
			}
		})
	}
}

// texts returns the lines' texts.
func texts(lines []bdLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

// fleetBreakdownDay returns what the fleet database holds of breakdown
// name on day, summed over the nodes: each key's count (day_paths, whose
// paths are a breakdown's keys), and the lines counted (days).
func fleetBreakdownDay(t *testing.T, url, name string, day time.Time) (map[string]bdCount, int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	site := logtally.BreakdownSite(name)
	rows, err := conn.Query(ctx, "SELECT path, sum(pageviews)::bigint FROM logtally.day_paths WHERE site = $1 AND day = $2 GROUP BY path",
		site, day)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bdCount{}
	for rows.Next() {
		var key string
		var n int64
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		keys[key] = bdCount{count: n}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var requests int64
	if err := conn.QueryRow(ctx, "SELECT coalesce(sum(requests), 0)::bigint FROM logtally.days WHERE site = $1 AND day = $2",
		site, day).Scan(&requests); err != nil {
		t.Fatal(err)
	}
	return keys, requests
}
