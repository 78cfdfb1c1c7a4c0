package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/parser"
)

// fleetNode is one `logtally run --fleet` process of the end-to-end test,
// following its own log.
type fleetNode struct {
	t       *testing.T
	name    string
	log, db string
	url     string // the fleet database
	extra   string // more flags

	mu   sync.Mutex
	data []byte  // every line written to the log
	d    *daemon // the running process; nil when stopped
}

// start starts the node's process and waits until it serves its API.
func (n *fleetNode) start() {
	n.t.Helper()
	d := startDaemon(n.t, fmt.Sprintf("--fleet %s --visitor-secret-file "+secretFile(n.t)+" --node %s --db %s --tz UTC --flush-interval 100ms "+
		"--fleet-refresh 200ms --poll-interval 20ms --cache-max-age 0 --dashboard=false %s %s", n.url, n.name, n.db, n.extra, n.log))
	n.mu.Lock()
	n.d = d
	n.mu.Unlock()
}

// signal sends sig to the node's process and waits for it to exit.
func (n *fleetNode) signal(sig syscall.Signal) {
	n.mu.Lock()
	d := n.d
	n.d = nil
	n.mu.Unlock()
	if d != nil {
		d.stop(sig)
	}
}

// write appends lines to the node's log.
func (n *fleetNode) write(lines []byte) {
	f, err := os.OpenFile(n.log, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		n.t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.Write(lines); err != nil {
		n.t.Error(err)
	}
	n.mu.Lock()
	n.data = append(n.data, lines...)
	n.mu.Unlock()
}

var fleetClient = &http.Client{Timeout: 10 * time.Second}

// get reads path from the node's API into v, and returns the status.
func (n *fleetNode) get(path string, v any) (int, error) {
	n.mu.Lock()
	d := n.d
	n.mu.Unlock()
	if d == nil {
		return 0, fmt.Errorf("node %s is stopped", n.name)
	}
	resp, err := fleetClient.Get(d.base() + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %v: %s", path, err, body)
		}
	}
	return resp.StatusCode, nil
}

// fleetStatus returns the node's fleet status, or nil if it does not answer.
func (n *fleetNode) fleetStatus() *api.FleetStatus {
	var st api.Status
	if code, err := n.get("/api/v1/status", &st); err != nil || code != http.StatusOK {
		return nil
	}
	return st.Fleet
}

// lineWriter writes log lines stamped with the current time or up to a
// minute and a half before it, as requests that took a while would be,
// from a pool of clients and pages that all nodes share.
type lineWriter struct {
	rng *rand.Rand
}

func (w *lineWriter) lines(n int) []byte {
	var b []byte
	now := time.Now().UTC()
	for range n {
		t := now.Add(-time.Duration(w.rng.IntN(90)) * time.Second)
		host := fmt.Sprintf("198.18.%d.%d", w.rng.IntN(2), w.rng.IntN(60))
		req, status, ua := fmt.Sprintf("GET /p/%d HTTP/1.1", w.rng.IntN(25)), 200, browser
		switch r := w.rng.IntN(10); {
		case r == 0:
			req = "GET /static/app.css HTTP/1.1"
		case r == 1:
			status = 404
		case r == 2:
			ua = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
		}
		b = fmt.Appendf(b, `%s - - [%s] "%s" %d 512 "-" "%s"`+"\n", host, t.Format("02/Jan/2006:15:04:05 -0700"), req, status, ua)
	}
	return b
}

// dayVisitor is a visitor as the daemon counts one: an address within
// one day (UTC, the tests' --tz), so a client seen before and after
// midnight is two.
type dayVisitor struct {
	day     int64
	visitor uint64
}

// truth is what brute force makes of a set of log lines.
type truth struct {
	hits []logtally.Hit
}

func newTruth(t *testing.T, logs ...[]byte) truth {
	t.Helper()
	format, err := parser.New("combined")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := classify.New(classify.DefaultConfig(), classify.Fixed{})
	if err != nil {
		t.Fatal(err)
	}
	var tr truth
	var rec parser.Record
	for _, data := range logs {
		for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
			if len(line) == 0 {
				continue
			}
			if err := format.Parse(line, &rec); err != nil {
				t.Fatalf("the test wrote a bad line: %q: %v", line, err)
			}
			h := rules.Classify(&rec)
			h.Path = bytes.Clone(h.Path)
			tr.hits = append(tr.hits, h)
		}
	}
	return tr
}

// window counts the hits in [from, to) as /api/v1/stats and /pages do.
func (tr truth) window(from, to time.Time) (api.Stats, []logtally.PageCount) {
	st := api.Stats{From: from, To: to, WindowSeconds: int64(to.Sub(from) / time.Second)}
	visitors := map[dayVisitor]bool{}
	views := map[string]int64{}
	for _, h := range tr.hits {
		if h.Time < from.Unix() || h.Time >= to.Unix() {
			continue
		}
		st.Requests++
		if h.PageView {
			st.PageViews++
			visitors[dayVisitor{logtally.FloorDiv(h.Time, 86400), h.Visitor}] = true
			views[string(h.Path)]++
		}
	}
	st.Visitors = int64(len(visitors))
	pages := []logtally.PageCount{}
	for p, n := range views {
		pages = append(pages, logtally.PageCount{Path: p, PageViews: n})
	}
	slices.SortFunc(pages, func(a, b logtally.PageCount) int {
		if a.PageViews != b.PageViews {
			return int(b.PageViews - a.PageViews)
		}
		return strings.Compare(a.Path, b.Path)
	})
	return st, pages
}

// minute counts the hits of the minute that starts at t.
func (tr truth) minute(t time.Time) api.SeriesPoint {
	p := api.SeriesPoint{T: t, Held: true}
	visitors := map[dayVisitor]bool{}
	for _, h := range tr.hits {
		if h.Time/60 != t.Unix()/60 {
			continue
		}
		p.Requests++
		p.Bytes += h.Bytes
		switch h.Status / 100 {
		case 1:
			p.Status.C1++
		case 2:
			p.Status.C2++
		case 3:
			p.Status.C3++
		case 4:
			p.Status.C4++
		case 5:
			p.Status.C5++
		}
		if h.PageView {
			p.PageViews++
			visitors[dayVisitor{logtally.FloorDiv(h.Time, 86400), h.Visitor}] = true
		}
	}
	p.Visitors = int64(len(visitors))
	return p
}

// compare reads a node's stats, pages and 1-minute series in scope and
// says how they differ from the truth; it returns the answers' as_of.
func compare(n *fleetNode, scope string, tr truth) (asOf time.Time, diff string) {
	q := "?scope=" + scope
	var st api.Stats
	var pages api.Pages
	var series api.SeriesBody
	for path, v := range map[string]any{"/api/v1/stats" + q: &st, "/api/v1/pages?limit=1000&scope=" + scope: &pages,
		"/api/v1/series" + q: &series} {
		if code, err := n.get(path, v); err != nil || code != http.StatusOK {
			return asOf, fmt.Sprintf("%s %s: %d %v", n.name, path, code, err)
		}
	}
	want, _ := tr.window(st.From, st.To)
	got := st
	got.AsOf = time.Time{}
	if got != want {
		return st.AsOf, fmt.Sprintf("%s %s stats:\n got %+v\nwant %+v", n.name, scope, got, want)
	}
	// Pages were read a moment apart from stats: their window may have moved.
	if _, wantPages := tr.window(pages.From, pages.To); fmt.Sprint(pages.Pages) != fmt.Sprint(wantPages) {
		return st.AsOf, fmt.Sprintf("%s %s pages of %s..%s:\n got %v\nwant %v", n.name, scope, pages.From, pages.To, pages.Pages, wantPages)
	}
	var total int64
	for _, p := range series.Points {
		total += p.Requests
		w := tr.minute(p.T)
		if scope != "node" {
			// The fleet's series carry no status classes or bytes yet.
			w.Status, w.Bytes = api.StatusClasses{}, 0
		}
		if p != w {
			return st.AsOf, fmt.Sprintf("%s %s series at %s: got %+v, want %+v", n.name, scope, p.T, p, w)
		}
	}
	if want := int64(len(tr.hits)); total != want || series.ApproximateVisitors {
		return st.AsOf, fmt.Sprintf("%s %s series: %d requests in %d points (approximate %v), want %d",
			n.name, scope, total, len(series.Points), series.ApproximateVisitors, want)
	}
	return st.AsOf, ""
}

// TestFleetEndToEnd runs a real PostgreSQL and three logtally nodes in
// separate processes, each following its own log, with visitors shared
// between them, while the test injects the faults of production: a node
// SIGKILLed and restarted (twice, once while PostgreSQL is down),
// connections cut with pg_terminate_backend, acknowledgements lost after
// COMMIT (a proxy forwards the COMMIT and cuts the client), and PostgreSQL
// stopped with -m immediate and started again. Afterwards every node's
// /api/v1/stats, /pages and 1-minute /series equal a brute-force count of
// all three logs, and their ?scope=node answers a count of their own log.
func TestFleetEndToEnd(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t) // its own: the test stops it and cuts its connections
	proxy := srv.Proxy(t)
	dir := t.TempDir()
	nodes := make([]*fleetNode, 3)
	for i, name := range []string{"a", "b", "c"} {
		nodes[i] = &fleetNode{t: t, name: name, url: proxy.URL(),
			log: filepath.Join(dir, name+".log"), db: filepath.Join(dir, name+".db")}
		nodes[i].write(nil)
		t.Cleanup(func() { nodes[i].signal(syscall.SIGTERM) })
	}
	for _, n := range nodes {
		n.start()
	}

	// The writer appends to every log until the faults are over, or the
	// test ends.
	stopWriting, written := make(chan struct{}), make(chan struct{})
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() { close(stopWriting) })
		<-written
	}
	t.Cleanup(stop)
	go func() {
		defer close(written)
		w := &lineWriter{rng: rand.New(rand.NewPCG(16, 3))}
		for {
			for _, n := range nodes {
				n.write(w.lines(5 + w.rng.IntN(40)))
			}
			select {
			case <-stopWriting:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	// shipped waits until every node has shipped more batches than it had
	// when it was called.
	shipped := func(what string) {
		t.Helper()
		before := make([]uint64, len(nodes))
		for i, n := range nodes {
			if st := n.fleetStatus(); st != nil {
				before[i] = st.AckedSeq
			}
		}
		poll.Until(t, what, func() bool {
			for i, n := range nodes {
				if st := n.fleetStatus(); st == nil || st.State != "shipping" || st.AckedSeq <= before[i] {
					return false
				}
			}
			return true
		})
	}
	shipped("every node to ship")

	// A node dies at once, mid-commit perhaps, and starts again.
	kills := 0
	nodes[1].signal(syscall.SIGKILL)
	kills++
	nodes[1].start()
	shipped("shipping after node b's SIGKILL")

	// An operator, or a failover, cuts every connection.
	terminated := 0
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, err := srv.TerminateOthers(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		terminated += n
		shipped("shipping after pg_terminate_backend")
	}

	// Replies to COMMIT lost on the wire, until a node has sent a batch
	// again that the fleet had applied, and acknowledged it as a duplicate.
	duplicates := func() (d int64) {
		for _, n := range nodes {
			if st := n.fleetStatus(); st != nil {
				d += st.Duplicates
			}
		}
		return d
	}
	for lost := 1; duplicates() == 0; lost++ {
		if lost > 30 {
			t.Fatalf("%d COMMIT replies lost and no batch acknowledged as a duplicate", lost-1)
		}
		proxy.LoseCommitReplies(1)
		poll.Until(t, "a lost COMMIT reply", func() bool { return proxy.Lost() >= lost })
		shipped("shipping after a lost COMMIT reply")
	}

	// PostgreSQL crashes: every node keeps counting, stays ready, serves
	// the last fleet counts it read, and keeps what it commits in its
	// outbox; one of them is killed and restarted meanwhile.
	srv.StopImmediate()
	down := func(n *fleetNode) bool {
		st := n.fleetStatus()
		return st != nil && st.State != "shipping" && st.PendingBatches > 0
	}
	poll.Until(t, "every node to notice PostgreSQL is down", func() bool {
		return down(nodes[0]) && down(nodes[1]) && down(nodes[2])
	})
	nodes[2].signal(syscall.SIGKILL)
	kills++
	nodes[2].start()
	poll.Until(t, "node c to commit while PostgreSQL is down", func() bool { return down(nodes[2]) })
	for _, n := range nodes {
		if code, err := n.get("/readyz", nil); code != http.StatusOK {
			t.Errorf("node %s /readyz while PostgreSQL is down = %d, %v; want 200", n.name, code, err)
		}
	}
	for _, n := range nodes[:2] {
		var st api.Stats
		if code, err := n.get("/api/v1/stats", &st); code != http.StatusOK || st.AsOf.IsZero() {
			t.Errorf("node %s /api/v1/stats while PostgreSQL is down = %d, %v, %+v; want the last counts", n.name, code, err, st)
		}
	}
	srv.Restart()
	shipped("shipping after PostgreSQL's restart")
	stop()

	// Now the answers must settle on the truth: every node's, for the
	// fleet and for itself, twice, the second time from fleet counts read
	// after the first agreed, with nothing left to ship.
	var logs [][]byte
	for _, n := range nodes {
		logs = append(logs, n.data)
	}
	all := newTruth(t, logs...)
	own := make([]truth, len(nodes))
	for i, n := range nodes {
		own[i] = newTruth(t, n.data)
	}
	var agreedAt time.Time
	diff := ""
	defer func() {
		if t.Failed() {
			t.Logf("the answers did not settle on the truth: %s", diff)
		}
	}()
	poll.Until(t, "the answers to settle on the truth", func() bool {
		var oldest time.Time
		diff, oldest = settled(nodes, own, all)
		switch {
		case diff == "" && !agreedAt.IsZero() && oldest.After(agreedAt):
			return true
		case diff == "" && agreedAt.IsZero():
			agreedAt = time.Now()
		case diff != "":
			agreedAt = time.Time{}
		}
		return false
	})
	t.Logf("%d lines in 3 logs; faults: %d SIGKILLs, %d backends terminated, %d COMMIT replies lost (%d duplicates), 1 immediate stop",
		len(all.hits), kills, terminated, proxy.Lost(), duplicates())
}

// settled compares every node's answers, for the fleet and for itself,
// with the truth, and says how the first that differs does; it returns
// the oldest as_of of the fleet's answers.
func settled(nodes []*fleetNode, own []truth, all truth) (diff string, oldest time.Time) {
	for i, n := range nodes {
		if st := n.fleetStatus(); st == nil || st.PendingBatches != 0 || st.State != "shipping" {
			return fmt.Sprintf("node %s has not shipped everything: %+v", n.name, st), oldest
		}
		if _, diff = compare(n, "node", own[i]); diff != "" {
			return diff, oldest
		}
		var asOf time.Time
		if asOf, diff = compare(n, "fleet", all); diff != "" {
			return diff, oldest
		}
		if oldest.IsZero() || asOf.Before(oldest) {
			oldest = asOf
		}
	}
	return "", oldest
}

// TestFleetOutboxFullPausesReading stops PostgreSQL under a node whose
// outbox holds two batches at most: it commits two, then pauses reading
// (not ready, saying why), and once PostgreSQL is back it ships them,
// reads on, and every line counts once, locally and in the fleet.
func TestFleetOutboxFullPausesReading(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t) // its own: the test stops it
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendLines(t, log)
	m := start(t, time.Now, "run", "--fleet", srv.URL(), "--visitor-secret-file", secretFile(t), "--node", "solo", "--db", filepath.Join(dir, "db"),
		"--admin-listen", "127.0.0.1:0", "--flush-interval", "20ms", "--fleet-refresh", "50ms", "--fleet-max-outbox", "2",
		"--breakdowns=", log) // a commit of one batch: each breakdown on adds one
	srv.Stop()
	now := func() string { return time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700") }
	for i := range 4 {
		commits := m.pipeline().Commits()
		appendLines(t, log, line(fmt.Sprintf("192.0.2.%d", i), now(), "GET /a HTTP/1.1", 200, browser))
		if i < 2 {
			poll.Until(t, "a commit", func() bool { return m.pipeline().Commits() > commits })
		}
	}
	poll.Until(t, "reading to pause", func() bool {
		code, body := get(t, m, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "fleet outbox full")
	})
	var st api.Status
	_, body := get(t, m, "/api/v1/status")
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Fleet == nil || st.Fleet.PendingBatches != 2 || st.Fleet.State == "shipping" {
		t.Fatalf("status with a full outbox: %s", body)
	}
	srv.Restart()
	poll.Until(t, "the fleet to count every line", func() bool {
		code, body := get(t, m, "/api/v1/stats")
		return code == http.StatusOK && strings.Contains(body, `"requests":4,`)
	})
	if code, body := get(t, m, "/readyz"); code != http.StatusOK {
		t.Errorf("readyz after shipping = %d %s", code, body)
	}
	if _, body := get(t, m, "/api/v1/stats?scope=node"); !strings.Contains(body, `"requests":4,`) {
		t.Errorf("node stats = %s, want 4 requests", body)
	}
}

// testSecret is the visitor secret of the tests' fleet nodes.
var testSecret = []byte("the fleet tests' visitor secret: 32+ bytes")

// secretFile writes testSecret to a file of its own and returns its path:
// every node given one has the same secret.
func secretFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "visitor.secret")
	if err := os.WriteFile(path, testSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
