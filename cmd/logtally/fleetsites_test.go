package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
)

// TestFleetSites: two nodes count two sites each from a vhost_combined log
// and ship them to one fleet database; ?site= answers for the site over
// the whole fleet, and with scope=node for the node alone; without it,
// for all sites of all nodes.
func TestFleetSites(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	dir := t.TempDir()
	now := time.Now().UTC().Add(-2 * time.Minute)
	want := map[string]map[string]int64{} // node -> site -> requests
	var nodes []*fleetNode
	for i, name := range []string{"a", "b"} {
		n := &fleetNode{t: t, name: name, url: url, log: filepath.Join(dir, name+".log"), db: filepath.Join(dir, name+".db"),
			extra: "--format vhost_combined --site-field %v"}
		want[name] = map[string]int64{}
		var lines []byte
		for j := range 40 + 30*i {
			site := []string{"blog.example.org", "shop.example.org"}[j%2]
			if j%5 == 0 {
				site = "shop.example.org"
			}
			want[name][site]++
			lines = fmt.Appendf(lines, `%s:443 192.0.2.%d - - [%s] "GET /p%d HTTP/1.1" 200 10 "-" "%s"`+"\n", site, j%7,
				now.Add(time.Duration(j)*time.Second).Format("02/Jan/2006:15:04:05 -0700"), j%3, browser)
		}
		n.write(lines)
		t.Cleanup(func() { n.signal(syscall.SIGTERM) })
		n.start()
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		poll.Until(t, "node "+n.name+" shipped", func() bool {
			st := n.fleetStatus()
			return st != nil && st.State == "shipping" && st.AckedSeq > 0 && st.PendingBatches == 0
		})
	}
	for _, site := range []string{"blog.example.org", "shop.example.org"} {
		fleet := want["a"][site] + want["b"][site]
		poll.Until(t, "the fleet's "+site, func() bool {
			var st api.Stats
			code, err := nodes[0].get("/api/v1/stats?site="+site, &st)
			return err == nil && code == http.StatusOK && st.Requests == fleet
		})
		for _, n := range nodes {
			var st api.Stats
			if code, err := n.get("/api/v1/stats?site="+site+"&scope=node", &st); err != nil || code != http.StatusOK ||
				st.Requests != want[n.name][site] {
				t.Errorf("node %s, %s alone: %d %v %+v, want %d requests", n.name, site, code, err, st, want[n.name][site])
			}
		}
		var series api.SeriesBody
		from, to := now.Add(-time.Minute).Unix(), now.Add(3*time.Minute).Unix()
		if code, err := nodes[1].get(fmt.Sprintf("/api/v1/series?site=%s&from=%d&to=%d&step=1h", site, from, to), &series); err != nil ||
			code != http.StatusOK {
			t.Fatalf("fleet series of %s: %d %v", site, code, err)
		}
		var got int64
		for _, p := range series.Points {
			got += p.Requests
		}
		if got != fleet {
			t.Errorf("fleet series of %s: %d requests, want %d", site, got, fleet)
		}
	}
	all := want["a"]["blog.example.org"] + want["a"]["shop.example.org"] + want["b"]["blog.example.org"] + want["b"]["shop.example.org"]
	poll.Until(t, "the fleet's all sites", func() bool {
		var st api.Stats
		code, err := nodes[1].get("/api/v1/stats", &st)
		return err == nil && code == http.StatusOK && st.Requests == all
	})
}
