package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// fleetCheck is what the final check found in the fleet database (-fleet).
type fleetCheck struct {
	minutes *result     // the fleet's minutes, against both nodes' lines
	window  windowCheck // the fleet's live window, as the first node answers it
	skew    *result     // the skewed node's own minutes
	paths   []pathCheck // the poison paths' page views, in the node and in the fleet
	// rejected is the rejected lines of each node in the fleet's minutes;
	// refused, the lines the skewed node was to refuse.
	rejected map[string]int64
	refused  int64
	err      error
}

// failed reports a difference; the first node's own counts may hold allow
// lines twice (a restored database).
func (f *fleetCheck) failed(allow int64) bool {
	inexact := func(r *result) bool { return r == nil || r.lost > 0 || r.doubled > 0 || r.other > 0 }
	return f.err != nil || inexact(f.minutes) || inexact(f.skew) || f.window.failed() || !pathsOK(f.paths, allow) ||
		f.rejected[skewNodeName] != f.refused || f.rejected[nodeName] != 0
}

// checkFleet waits until both nodes have shipped their whole outboxes, then
// compares the skewed node's own minutes, every minute the fleet database
// holds, the fleet's live window, the poison paths' page views and the
// nodes' rejected lines with what was written.
func (s *soak) checkFleet(ctx context.Context, d *daemon, from, to time.Time, hits []hit) *fleetCheck {
	f := &fleetCheck{}
	shipped := waitFor(ctx, d, 60*time.Second, func() bool {
		var st fleetStatus
		code, err := s.api.get(ctx, "/api/v1/status", &st)
		return err == nil && code == 200 && st.Fleet != nil && st.Fleet.State == "shipping" && st.Fleet.PendingBatches == 0
	})
	if !shipped {
		f.err = fmt.Errorf("the outbox was not shipped to the fleet database within 60s")
		return f
	}
	_, skewHits := s.skew.w.truth()
	all := slices.Concat(hits, skewHits)
	first, last := all[0].sec, all[0].sec
	for _, h := range all {
		first, last = min(first, h.sec), max(last, h.sec)
	}
	// Wide enough for the minutes of the lines the skewed node refused.
	from, to = time.Unix((first/60-2)*60, 0), time.Unix((last/60+2)*60, 0).Add(skewFar)
	if f.skew, f.err = s.checkSkewNode(ctx, from, to); f.err != nil {
		return f
	}
	both := time.Now()
	if f.minutes, f.err = s.fleetMinutes(ctx, from, to, all); f.err != nil {
		return f
	}
	f.window = s.fleetWindow(ctx, all, both)
	if f.paths, f.err = s.checkRawPaths(ctx, s.w.oddities().rawViews); f.err != nil {
		return f
	}
	f.refused = s.skew.w.oddities().refused
	f.rejected, f.err = s.fleetRejected(ctx)
	return f
}

// fleetMinutes compares every minute of the fleet from from to to with
// the truth of hits, which carries no bytes there (docs/fleet.md, What is
// exact).
func (s *soak) fleetMinutes(ctx context.Context, from, to time.Time, hits []hit) (*result, error) {
	ser, err := s.api.seriesScoped(ctx, from, to, "fleet")
	if err != nil {
		return nil, err
	}
	truth := byMinute(hits)
	for m, c := range truth {
		c.bytes = 0
		truth[m] = c
	}
	r := &result{written: int64(len(hits))}
	s.compareMinutes(r, ser, truth)
	return r, nil
}

// fleetWindow compares the fleet's live window, as the first node serves
// it from a read of the fleet database made after since, with the truth of
// both nodes' lines.
func (s *soak) fleetWindow(ctx context.Context, hits []hit, since time.Time) windowCheck {
	c := windowCheck{name: "fleet live window"}
	var st stats
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, err := s.api.get(ctx, "/api/v1/stats?scope=fleet", &st)
		if err == nil && code != 200 {
			err = fmt.Errorf("status %d", code)
		}
		if err == nil && st.AsOf.After(since) {
			break
		}
		if time.Now().After(deadline) {
			c.err = fmt.Errorf("no read of the fleet's window after both nodes shipped within 10s (as of %s, %v)", st.AsOf, err)
			return c
		}
		sleep(ctx, 100*time.Millisecond)
	}
	c.from, c.to = st.From, st.To
	c.got = counts{requests: st.Requests, pageViews: st.PageViews, visitors: st.Visitors}
	c.want = fleetTally(hits, st.From.Unix(), st.To.Unix())
	return c
}

// fleetTally is the truth of the fleet's window [from, to): the requests
// and page views of its seconds, and the distinct visitors whose latest
// page view, on any node, is in it (docs/fleet.md, What is exact). A
// visitor whose latest page view is dated after to, within a node's
// --max-skew, counts in the windows that hold it, not in this one.
func fleetTally(hits []hit, from, to int64) counts {
	var c counts
	latest := map[uint64]int64{}
	for _, h := range hits {
		if h.pageView {
			latest[h.visitor] = max(latest[h.visitor], h.sec)
		}
		if h.sec < from || h.sec >= to {
			continue
		}
		c.requests++
		if h.pageView {
			c.pageViews++
		}
	}
	for _, sec := range latest {
		if sec >= from && sec < to {
			c.visitors++
		}
	}
	return c
}

// fleetRejected returns the rejected lines of each node in the fleet's
// minutes, which the API does not serve.
func (s *soak) fleetRejected(ctx context.Context) (map[string]int64, error) {
	conn, err := pgx.Connect(ctx, s.fleet.server.URL())
	if err != nil {
		return nil, fmt.Errorf("rejected lines in the fleet: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT node, sum(rejected)::int8 FROM logtally.minutes WHERE site = 'default' GROUP BY node`)
	if err != nil {
		return nil, fmt.Errorf("rejected lines in the fleet: %w", err)
	}
	out := map[string]int64{}
	var node string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&node, &n}, func() error {
		out[node] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rejected lines in the fleet: %w", err)
	}
	return out, nil
}

// fleetRows writes what the soak did to the fleet and what the fleet
// held at the end.
func (s *soak) fleetRows(row rowFunc, f faults, fc *fleetCheck) {
	row("postgres restarts", "%d (stopped as a crash would, while a daemon ran); status said retrying in %d, outbox grew in %d",
		f.pgRestarts, f.pgRetrying, f.pgOutboxGrew)
	s.mu.Lock()
	b := s.blocks
	s.mu.Unlock()
	odd := s.w.oddities()
	blocked := "never blocked"
	if b.blocked > 0 {
		blocked = fmt.Sprintf("BLOCKED in %d (%s)", b.blocked, b.last)
	}
	row("poison lines", "%d with raw bytes in their paths (%d page views); shipping state polled %d times: %s",
		odd.raw, sumValues(odd.rawViews), b.polls, blocked)
	row("name taken", "%d second processes under --node %s with a fresh database, %d refused (after %s: %s)",
		f.clashes, nodeName, f.clashRefused, f.clashTook.Round(time.Millisecond), shorten(f.clashSaid, 120))
	row("restored database", "%d restored from a backup made with %d lines written, started with postgres down; "+
		"stopped shipping on reaching it in %d (%s), then restarted",
		f.restores, f.backupLines, f.restoreStopped, shorten(f.restoreSaid, 80))
	if fc == nil {
		return
	}
	if fc.err != nil {
		row("fleet database", "%v", fc.err)
	}
	s.skewRows(row, fc)
	if fc.minutes != nil {
		row("fleet database", "%d lines counted (both nodes), %d lost, %d doubled, %d minutes with other counts",
			fc.minutes.counted, fc.minutes.lost, fc.minutes.doubled, fc.minutes.other)
	}
	if fc.window.name != "" {
		windowRow(row, fc.window)
	}
	if fc.paths != nil {
		verdict := "exact"
		if !pathsOK(fc.paths, f.allowDoubled) {
			verdict = "DIFFERENT"
		}
		row("poison page views", "all time (got/written): %s: %s", describePaths(fc.paths), verdict)
	}
}

// skewRows writes what the skewed node counted, and refused.
func (s *soak) skewRows(row rowFunc, fc *fleetCheck) {
	odd := s.skew.w.oddities()
	row("skewed node", "%s: --window %s --max-skew %s, lines dated %s ahead; %d restarts",
		skewNodeName, skewWindow, skewMaxSkew, skewLead, s.skew.restarts)
	if r := fc.skew; r != nil {
		row("  its own minutes", "%d lines written, %d counted, %d lost, %d doubled, %d minutes with other counts",
			r.written-odd.refused, r.counted, r.lost, r.doubled, r.other)
	}
	if fc.rejected != nil {
		row("  refused", "%d lines dated %s further ahead; %d rejected in the fleet's minutes (the first node: %d)",
			odd.refused, skewFar, fc.rejected[skewNodeName], fc.rejected[nodeName])
	}
}

func sumValues(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
