package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// The skewed node (-fleet): a second node, with its own log, database and
// --node, that dates its lines ahead, as nginx on a machine whose clock
// runs fast does, and runs with a shorter --window and --max-skew than the
// first node. Once, such a node hid visitors from every other node's
// window and its pruning, by its own clock and --window, deleted seconds
// the others' windows held. Now the fleet's clock is the database's, the
// live window's rows are kept for the longest --window plus --max-skew of
// any node, and a node's seconds dated beyond the database's clock plus
// its --max-skew stay out of the live window (docs/fleet.md, Clocks).
//
// logtally takes its clock from the system (a test injects one, the binary
// has no such hook, and a static Go binary reads the time without libc,
// past faketime), so only the log's times are skewed here, not the node's
// clock: its lines are dated skewLead ahead, within its --max-skew, which
// its window holds and counts when their second comes and the fleet takes
// into its live window as such; and one in skewFarEvery skewFar ahead,
// beyond it, which the node itself refuses ("timestamp too far in the
// future"): they count nowhere but in its rejected lines (the fleet's
// minutes' rejected column). Its pruning (at each start, and every
// minute) keeps by its own --window and --max-skew only skewNodeSpan,
// which the first node's window of -window outlasts within the run.
const (
	skewNodeName = "soak-skew"
	skewLead     = 15 * time.Second
	skewFar      = 5 * time.Minute
	skewFarEvery = 40
	skewWindow   = 10 * time.Second
	skewMaxSkew  = 20 * time.Second
	skewNodeSpan = skewWindow + skewMaxSkew
)

// skewNode is the skewed node: its files, its writer, its daemon.
type skewNode struct {
	dir, addr string
	api       *api
	w         *writer
	log       *os.File
	d         *daemon // the one running
	restarts  int
	secret    string // the fleet's --visitor-secret-file
}

// skewRate is the skewed node's lines a second: a quarter of the first's.
func skewRate(rate int) int { return max(rate/4, 1) }

// newSkewNode makes the skewed node's files and writer; its lines start
// at start plus skewLead.
func (s *soak) newSkewNode(start time.Time) (*skewNode, error) {
	n := &skewNode{dir: filepath.Join(s.dir, "skew"), secret: s.secretPath()}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n.addr = "127.0.0.1:" + strconv.Itoa(port)
	n.api = newAPI(n.addr)
	n.api.scope = "node"
	if n.log, err = os.Create(filepath.Join(n.dir, "daemon.log")); err != nil {
		return nil, err
	}
	src := source{seed: s.cfg.seed + 1, rate: skewRate(s.cfg.rate), lead: skewLead, edit: farAhead}
	n.w, err = newWriter(filepath.Join(n.dir, "access.log"), src, start)
	return n, err
}

// farAhead dates every skewFarEvery-th line skewFar further ahead, beyond
// the skewed node's --max-skew: the node refuses it.
func farAhead(n int64, line []byte) ([]byte, bool) {
	if n%skewFarEvery != skewFarEvery-1 {
		return line, false
	}
	loc := stamp.FindSubmatchIndex(line)
	if loc == nil {
		return line, false
	}
	t, err := time.Parse(stampLayout, string(line[loc[2]:loc[3]]))
	if err != nil {
		return line, false
	}
	out := append([]byte{}, line[:loc[2]]...)
	out = t.Add(skewFar).AppendFormat(out, stampLayout)
	return append(out, line[loc[3]:]...), true
}

func (n *skewNode) args(url string) []string {
	return []string{"run", "--db", filepath.Join(n.dir, "logtally.db"), "--tz", "UTC", "--admin-listen", n.addr,
		"--window", skewWindow.String(), "--max-skew", skewMaxSkew.String(), "--log-level", "warn",
		"--fleet", url, "--visitor-secret-file", n.secret, "--node", skewNodeName, "--fleet-refresh", "250ms", n.w.path}
}

func (n *skewNode) start(bin, url string) (err error) {
	fmt.Fprintf(n.log, "=== %s start\n", time.Now().Format(time.RFC3339Nano))
	n.d, err = startDaemon(bin, n.args(url), n.log)
	return err
}

// startSkewNode starts the skewed node and waits until it ships, before
// any fault: a node that loses the fleet database between reaching it and
// registering its name exits (fleet.Node.Check), which the soak does not
// provoke here.
func (s *soak) startSkewNode(ctx context.Context) error {
	n := s.skew
	if err := n.start(s.bin, s.fleet.server.URL()); err != nil {
		return err
	}
	if !n.shipping(ctx) {
		return fmt.Errorf("the skewed node did not ship within 30s of its start: %v (see skew/daemon.log)", n.d.err)
	}
	s.say("skewed node %s shipping: its lines dated %s ahead (1 in %d %s, beyond its --max-skew %s), --window %s",
		skewNodeName, skewLead, skewFarEvery, skewFar, skewMaxSkew, skewWindow)
	return nil
}

// shipping waits until the skewed node's shipping state is "shipping".
func (n *skewNode) shipping(ctx context.Context) bool {
	return waitFor(ctx, n.d, 30*time.Second, func() bool {
		var st fleetStatus
		code, err := n.api.get(ctx, "/api/v1/status", &st)
		return err == nil && code == 200 && st.Fleet != nil && st.Fleet.State == "shipping"
	})
}

// restartSkewNode kills the skewed node and starts it again: a node
// prunes at its start. The soak does it once, when the first node's oldest
// seconds are older than skewNodeSpan (see identityDowntime).
func (s *soak) restartSkewNode(ctx context.Context) error {
	n := s.skew
	if !n.d.kill() {
		return fmt.Errorf("the skewed node exited by itself: %v (see skew/daemon.log)", n.d.err)
	}
	down := s.randDuration(300*time.Millisecond, time.Second)
	if err := sleep(ctx, down); err != nil {
		return err
	}
	if err := n.start(s.bin, s.fleet.server.URL()); err != nil {
		return err
	}
	n.restarts++
	if !n.shipping(ctx) {
		return fmt.Errorf("the skewed node did not ship within 30s of its restart: %v (see skew/daemon.log)", n.d.err)
	}
	s.say("skewed node: kill -9, restarted after %s; it pruned at its start, its own --window and --max-skew keeping %s",
		down.Round(time.Millisecond), skewNodeSpan)
	return nil
}

// close kills the skewed node if it runs, and closes its files.
func (n *skewNode) close() {
	if n.d != nil && !n.d.exited() {
		n.d.kill()
	}
	n.w.close()
	n.log.Close()
}

// checkSkewNode waits until the skewed node has counted and shipped every
// line it accepts, and compares its own stored minutes with its writer's
// truth, as the first node's are.
func (s *soak) checkSkewNode(ctx context.Context, from, to time.Time) (*result, error) {
	n := s.skew
	if n.d.exited() {
		return nil, fmt.Errorf("the skewed node exited by itself: %v (see skew/daemon.log)", n.d.err)
	}
	written, hits := n.w.truth()
	r := &result{written: written}
	caught := waitFor(ctx, n.d, 60*time.Second, func() bool {
		ser, err := n.api.series(ctx, from, to)
		var st fleetStatus
		code, serr := n.api.get(ctx, "/api/v1/status", &st)
		return err == nil && sumRequests(ser) >= int64(len(hits)) &&
			serr == nil && code == 200 && st.Fleet != nil && st.Fleet.State == "shipping" && st.Fleet.PendingBatches == 0
	})
	if !caught {
		return r, fmt.Errorf("the skewed node did not count and ship its %d lines within 60s", len(hits))
	}
	ser, err := n.api.series(ctx, from, to)
	if err != nil {
		return r, err
	}
	s.compareMinutes(r, ser, byMinute(hits))
	return r, nil
}

// sumRequests returns the requests of a series' points.
func sumRequests(ser series) int64 {
	var sum int64
	for _, p := range ser.Points {
		if p.Requests != nil {
			sum += *p.Requests
		}
	}
	return sum
}

// stamp is a line's time, [02/Jan/2006:15:04:05 -0700], as stampLayout.
var stamp = regexp.MustCompile(`\[(\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})\]`)

const stampLayout = "02/Jan/2006:15:04:05 -0700"
