package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// counts is what a minute or the window holds, by the truth or by logtally.
type counts struct {
	requests, pageViews, visitors, bytes int64
}

// tally sums the hits whose second is in [from, to).
func tally(hits []hit, from, to int64) counts {
	var c counts
	seen := map[uint64]bool{}
	for _, h := range hits {
		if h.sec < from || h.sec >= to {
			continue
		}
		c.requests++
		c.bytes += h.bytes
		if h.pageView {
			c.pageViews++
			if !seen[h.visitor] {
				seen[h.visitor] = true
				c.visitors++
			}
		}
	}
	return c
}

// byMinute returns the truth of every minute, by its unix minute.
func byMinute(hits []hit) map[int64]counts {
	groups := map[int64][]hit{}
	for _, h := range hits {
		groups[h.sec/60] = append(groups[h.sec/60], h)
	}
	out := make(map[int64]counts, len(groups))
	for m, hs := range groups {
		out[m] = tally(hs, m*60, m*60+60)
	}
	return out
}

// windowCheck is one comparison of /api/v1/stats with the truth.
type windowCheck struct {
	name      string
	from, to  time.Time
	got, want counts
	err       error
	note      string // why a difference is not a failure
}

// failed reports a difference that is not explained by note.
func (w windowCheck) failed() bool { return !w.ok() && w.note == "" }

func (w windowCheck) ok() bool {
	return w.err == nil && w.got.requests == w.want.requests && w.got.pageViews == w.want.pageViews &&
		w.got.visitors == w.want.visitors
}

// result is what the final check found.
type result struct {
	written, counted, lost, doubled int64
	minutes                         int // minutes compared
	other                           int // minutes whose requests agree but page views, visitors or bytes do not
	approximate                     bool
	diffs                           []string // the first differing minutes
	windows                         []windowCheck
	report                          int64 // total requests of `logtally report --json`
	reportErr                       error
	fleet                           *fleetCheck // -fleet: what the fleet database holds
	// allowDoubled is how many lines the node's own counts may hold twice:
	// after its database was restored (-fleet), those it read again.
	allowDoubled int64
}

// wantReport is the total `logtally report` must show: every line, or
// what the minutes hold after a restored database.
func (r *result) wantReport() int64 {
	if r.allowDoubled > 0 {
		return r.counted
	}
	return r.written
}

func (r *result) failed() bool {
	if r.lost > 0 || r.doubled > r.allowDoubled || r.other > 0 || r.reportErr != nil || r.report != r.wantReport() {
		return true
	}
	if r.fleet != nil && r.fleet.failed(r.allowDoubled) {
		return true
	}
	for _, w := range r.windows {
		if w.failed() {
			return true
		}
	}
	return false
}

// check lets the running daemon (or a new one) catch up with everything
// written, compares its live window with the truth, stops it with SIGTERM,
// starts one more on the same files, and compares that one's window, every
// stored minute, and `logtally report`'s total with the truth.
func (s *soak) check(ctx context.Context, d *daemon) (*result, error) {
	if _, err := s.growIfFull(); err != nil {
		return nil, err
	}
	var err error
	if d == nil {
		if d, err = s.start(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.f.restarts++
		s.mu.Unlock()
	}
	written, hits := s.w.truth()
	s.mu.Lock()
	r := &result{written: written, allowDoubled: s.f.allowDoubled}
	s.mu.Unlock()
	if len(hits) == 0 {
		d.kill()
		return r, fmt.Errorf("no line was written")
	}
	firstMin, lastMin := hits[0].sec/60, hits[len(hits)-1].sec/60
	from, to := time.Unix((firstMin-2)*60, 0), time.Unix((lastMin+2)*60, 0)
	if err := s.catchUp(ctx, d, written, from, to); err != nil {
		return r, err
	}
	sleep(ctx, time.Second) // a snapshot is published every 100 ms
	r.windows = append(r.windows, s.lastWindow(ctx, hits))
	if err := d.stop(15 * time.Second); err != nil {
		s.problem("SIGTERM: %v", err)
	}
	s.ended(d)
	if err := s.checkRestart(ctx, r, hits, from, to); err != nil {
		return r, err
	}
	r.report, r.reportErr = s.reportTotal(ctx, from, to)
	return r, nil
}

// catchUp waits until the requests d stored from from to to reach what was
// written, or stop growing for longer than a rotated file is read after it
// last grew (--idle-grace) and a re-scan.
func (s *soak) catchUp(ctx context.Context, d *daemon, written int64, from, to time.Time) error {
	t := time.Now()
	var last int64
	lastChange := time.Now()
	for {
		ser, err := s.api.series(ctx, from, to)
		if err == nil {
			var sum int64
			for _, p := range ser.Points {
				if p.Requests != nil {
					sum += *p.Requests
				}
			}
			if sum != last {
				last, lastChange = sum, time.Now()
			}
			if sum >= written {
				break
			}
		}
		if d.exited() {
			s.ended(d)
			return fmt.Errorf("logtally run exited while catching up")
		}
		if time.Since(lastChange) > 45*time.Second {
			s.say("caught up with %d of %d lines: nothing more counted for 45s", last, written)
			break
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			d.kill()
			return err
		}
	}
	s.say("caught up in %s", time.Since(t).Round(time.Millisecond))
	return nil
}

// lastWindow compares the last run's live window with the truth.
//
// A window restored at a start holds the lines a replay added to a minute
// at that minute's last second, and those of the minute it starts in only
// when the checkpoint holds all of that minute's seconds (ingest.Restore):
// after a replay, the window's first minute is right to the minute only.
// Such a difference is shown, not failed.
func (s *soak) lastWindow(ctx context.Context, hits []hit) windowCheck {
	w := s.compareWindow(ctx, "live window, last run", hits)
	s.restoredNote(&w)
	s.mu.Lock()
	replayed := s.f.replayLines
	s.mu.Unlock()
	if !w.ok() && w.err == nil && replayed > 0 {
		m := w.from.Unix() / 60 * 60
		bound := min(tally(hits, m, m+60).requests, replayed)
		if diff := w.got.requests - w.want.requests; diff >= -bound && diff <= bound {
			w.note = fmt.Sprintf("differs by %+d requests: a restart after a replay restores the window's first minute to the minute (at most %d here)", diff, bound)
		}
	}
	return w
}

// checkRestart starts one last daemon on the same files: it reads nothing
// new, and serves the window restored from the database. With --window-end
// log, whatever the run's, that window ends at the last second of the
// newest stored minute and so starts on a minute: then every line is in it
// at its own second (checkpointed by a run) or at the last second of its
// minute (added by a replay), and its counts are exact (ingest.Restore).
// It compares that window, and every stored minute (and the fleet
// database's, with -fleet), with the truth.
func (s *soak) checkRestart(ctx context.Context, r *result, hits []hit, from, to time.Time) error {
	d, err := s.startWith("log")
	if err != nil {
		return err
	}
	defer func() {
		if !d.exited() {
			d.kill()
		}
	}()
	if !waitFor(ctx, d, 30*time.Second, func() bool { return s.api.ready(ctx) == 200 }) {
		s.ended(d)
		return fmt.Errorf("the last daemon was not ready within 30s")
	}
	sleep(ctx, time.Second)
	w := s.compareWindow(ctx, "live window, restarted (log end)", hits)
	s.restoredNote(&w)
	r.windows = append(r.windows, w)
	ser, err := s.api.series(ctx, from, to)
	if err != nil {
		return err
	}
	s.compareMinutes(r, ser, byMinute(hits))
	if s.fleet != nil {
		r.fleet = s.checkFleet(ctx, d, from, to, hits)
	}
	if err := d.stop(15 * time.Second); err != nil {
		s.problem("SIGTERM: %v", err)
	}
	s.ended(d)
	return nil
}

// restoredNote explains a node's window that holds more than the truth by
// at most the lines its restored database may count twice (docs/fleet.md:
// the node's own counts are not undone), with as many visitors.
func (s *soak) restoredNote(w *windowCheck) {
	s.mu.Lock()
	allow := s.f.allowDoubled
	s.mu.Unlock()
	if w.ok() || w.err != nil || allow == 0 {
		return
	}
	dr, dp := w.got.requests-w.want.requests, w.got.pageViews-w.want.pageViews
	if dr >= 0 && dr <= allow && dp >= 0 && dp <= dr && w.got.visitors == w.want.visitors {
		w.note = fmt.Sprintf("%+d requests: lines the restored database read again (at most %d here, docs/fleet.md)", dr, allow)
	}
}

func (s *soak) compareWindow(ctx context.Context, name string, hits []hit) windowCheck {
	var st stats
	c := windowCheck{name: name}
	code, err := s.api.get(ctx, s.api.scoped("/api/v1/stats"), &st)
	if err == nil && code != 200 {
		err = fmt.Errorf("status %d", code)
	}
	if err != nil {
		c.err = err
		return c
	}
	c.from, c.to = st.From, st.To
	c.got = counts{requests: st.Requests, pageViews: st.PageViews, visitors: st.Visitors}
	c.want = tally(hits, st.From.Unix(), st.To.Unix())
	c.want.bytes = 0
	return c
}

func (s *soak) compareMinutes(r *result, ser series, truth map[int64]counts) {
	r.approximate = ser.Approximate
	for _, p := range ser.Points {
		m := p.T.Unix() / 60
		want := truth[m]
		var got counts
		null := p.Requests == nil
		if !null {
			got = counts{requests: *p.Requests, pageViews: *p.PageViews, visitors: *p.Visitors, bytes: *p.Bytes}
		}
		r.counted += got.requests
		if want.requests > 0 || got.requests > 0 {
			r.minutes++
		}
		var what string
		switch {
		case null:
			what = "not kept (null)"
			r.lost += want.requests
		case got.requests < want.requests:
			r.lost += want.requests - got.requests
			what = fmt.Sprintf("%d lost", want.requests-got.requests)
		case got.requests > want.requests:
			r.doubled += got.requests - want.requests
			what = fmt.Sprintf("%d doubled", got.requests-want.requests)
		case got != want:
			r.other++
			what = "page views, visitors or bytes differ"
		default:
			continue
		}
		if len(r.diffs) < 10 {
			r.diffs = append(r.diffs, fmt.Sprintf("%s  %-36s stored %+v, written %+v",
				p.T.UTC().Format("15:04"), what, got, want))
		}
	}
}

// reportTotal runs `logtally report --json` over the days of the run.
func (s *soak) reportTotal(ctx context.Context, from, to time.Time) (int64, error) {
	out, err := exec.CommandContext(ctx, s.bin, "report", "--db", s.dbPath, "--tz", "UTC", "--json",
		"--from", from.UTC().Format(time.DateOnly), "--to", to.UTC().Format(time.DateOnly)).Output()
	if err != nil {
		return 0, fmt.Errorf("logtally report: %w", err)
	}
	var rep struct {
		Total struct {
			Requests int64 `json:"requests"`
		} `json:"total"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return 0, fmt.Errorf("logtally report: %w", err)
	}
	return rep.Total.Requests, nil
}

// print writes the final table and returns the exit status.
func (s *soak) print(r *result) int {
	s.mu.Lock()
	f, peak, problems := s.f, s.peakRSS, slices.Clone(s.problems)
	s.mu.Unlock()
	out := s.out
	fmt.Fprintln(out)
	if r == nil {
		fmt.Fprintf(out, "soak: FAIL (seed %d): the run did not reach its check\n", s.cfg.seed)
		return 1
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	r.rows(row)
	s.faultRows(row, f, r)
	row("unexpected exits", "%d", f.unexpectedExits)
	row("peak RSS", "%.1f MB (VmHWM, the most of any logtally run)", float64(peak)/1024)
	row("elapsed", "%s", time.Since(s.began).Round(100*time.Millisecond))
	tw.Flush()
	printDiffs(out, "first differing minutes (UTC):", r.diffs)
	if r.fleet != nil && r.fleet.minutes != nil {
		printDiffs(out, "first differing minutes of the fleet database (UTC):", r.fleet.minutes.diffs)
	}
	if r.fleet != nil && r.fleet.skew != nil {
		printDiffs(out, "first differing minutes of the skewed node (UTC):", r.fleet.skew.diffs)
	}
	for _, p := range problems {
		fmt.Fprintln(out, "problem: "+p)
	}
	if r.failed() || len(problems) > 0 {
		fmt.Fprintf(out, "\nsoak: FAIL (seed %d): %s\n", s.cfg.seed, r.why())
		return 1
	}
	if r.doubled > 0 {
		fmt.Fprintf(out, "\nsoak: PASS (seed %d): every line counted once in the fleet; the node's own counts hold %d lines twice "+
			"after its database was restored, as docs/fleet.md says\n", s.cfg.seed, r.doubled)
		return 0
	}
	fmt.Fprintf(out, "\nsoak: PASS (seed %d): every line counted once\n", s.cfg.seed)
	return 0
}

// rowFunc writes one row of the final table: what, then what was found.
type rowFunc func(k, format string, args ...any)

// rows writes what the check found: the lines, the minutes, the report and
// the windows.
func (r *result) rows(row rowFunc) {
	row("lines written", "%d", r.written)
	row("lines counted", "%d (stored minutes, /api/v1/series step=1m)", r.counted)
	row("lost", "%d", r.lost)
	if r.allowDoubled > 0 {
		row("doubled", "%d (at most %d allowed: the node's own counts after its database was restored, docs/fleet.md)", r.doubled, r.allowDoubled)
	} else {
		row("doubled", "%d", r.doubled)
	}
	row("minutes compared", "%d; %d with other page views, visitors or bytes", r.minutes, r.other)
	if r.reportErr != nil {
		row("report --json total", "%v", r.reportErr)
	} else {
		row("report --json total", "%d requests", r.report)
	}
	for _, w := range r.windows {
		windowRow(row, w)
	}
}

// windowRow writes one window's comparison.
func windowRow(row rowFunc, w windowCheck) {
	if w.err != nil {
		row(w.name, "%v", w.err)
		return
	}
	verdict := "equal"
	switch {
	case w.note != "":
		verdict = w.note
	case !w.ok():
		verdict = "DIFFERENT"
	}
	row(w.name, "%s to %s: requests %d/%d, page views %d/%d, visitors %d/%d (stored/written): %s",
		w.from.UTC().Format("15:04:05"), w.to.UTC().Format("15:04:05"), w.got.requests, w.want.requests,
		w.got.pageViews, w.want.pageViews, w.got.visitors, w.want.visitors, verdict)
}

// faultRows writes what the soak did, f, and what the fleet database
// held at the end (in r).
func (s *soak) faultRows(row rowFunc, f faults, r *result) {
	row("kills (SIGKILL)", "%d", f.kills)
	row("restarts", "%d", f.restarts)
	row("rotations", "%d rename, %d copytruncate (%d of them while the daemon was down)",
		f.renames, f.copytruncates, f.rotationsDown)
	row("two rotations in one downtime", "%d", f.doubleRotationDowntimes)
	row("gzip while down", "%d downtimes, %d files", f.gzipDowntimes, f.gzipFiles)
	row("replays between runs", "%d (%d lines read by replay)", f.replays, f.replayLines)
	if s.disk == nil {
		row("disk full", "skipped (no tmpfs: not root, or mount failed)")
	} else {
		row("disk full", "%d episodes, commits failed in %d, killed while full in %d", f.diskFull, f.diskFullFailed, f.killedInFull)
	}
	if s.fleet != nil {
		s.fleetRows(row, f, r.fleet)
	}
}

// printDiffs writes the differing minutes diffs under title, if any.
func printDiffs(out io.Writer, title string, diffs []string) {
	if len(diffs) == 0 {
		return
	}
	fmt.Fprintln(out, "\n"+title)
	for _, d := range diffs {
		fmt.Fprintln(out, "  "+d)
	}
}

// why says in short why a failed run failed.
func (r *result) why() string {
	var why []string
	if r.lost > 0 {
		why = append(why, fmt.Sprintf("%d lost", r.lost))
	}
	if r.doubled > r.allowDoubled {
		why = append(why, fmt.Sprintf("%d doubled", r.doubled))
	}
	if r.fleet != nil && r.fleet.failed(r.allowDoubled) {
		why = append(why, "the fleet differs")
	}
	if len(why) == 0 {
		why = append(why, "see above")
	}
	return strings.Join(why, ", ")
}
