// Command live measures how fast appended lines become visible in a running
// logtally: it appends generated combined-format lines (internal/loggen) to a
// file at a fixed rate, and polls /api/v1/stats until the window's request
// count covers each write.
//
// The one idea: every write is a batch of consecutive lines with a known
// last index, and the window's "requests" counts parsed lines, so the first
// poll that answers requests >= baseline+index is when that write became
// visible. The latency is taken at the moment the poll's answer arrived, so
// it is at worst one poll interval late, never early.
//
//	go run ./bench/live -file access.log -url http://127.0.0.1:8080/api/v1/stats -rate 100000 -duration 30s
//
// It prints one key=value per line, each key prefixed by -prefix, for
// bench/run to collect.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally/internal/loggen"
)

func main() {
	var c config
	flag.StringVar(&c.file, "file", "", "log file to append to (created if missing)")
	flag.StringVar(&c.url, "url", "", "the daemon's /api/v1/stats URL; empty: write only")
	flag.IntVar(&c.rate, "rate", 100_000, "lines per second")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "how long to write")
	flag.DurationVar(&c.tick, "tick", 10*time.Millisecond, "time between writes")
	flag.DurationVar(&c.poll, "poll", 2*time.Millisecond, "time between polls of -url")
	flag.DurationVar(&c.drain, "drain", 30*time.Second, "longest wait, once writing stops, for every line to be visible")
	flag.Uint64Var(&c.seed, "seed", 1, "generator seed")
	flag.StringVar(&c.prefix, "prefix", "live_", "prefix of every printed key")
	flag.Parse()
	if c.file == "" || c.rate <= 0 || c.duration <= 0 || c.tick <= 0 {
		fmt.Fprintln(os.Stderr, "live: -file, and positive -rate, -duration and -tick, are required")
		os.Exit(2)
	}
	res, err := run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
	for _, kv := range res {
		fmt.Printf("%s%s=%s\n", c.prefix, kv[0], kv[1])
	}
}

type config struct {
	file, url, prefix string
	rate              int
	duration, tick    time.Duration
	poll, drain       time.Duration
	seed              uint64
}

// write is one append: lines up to last (1-based, counted from the start of
// this run) were on disk at at.
type write struct {
	last int64
	at   time.Time
}

// recorder matches writes to the polls that first saw them.
type recorder struct {
	mu      sync.Mutex
	writes  []write
	next    int             // first write not yet seen
	latency []time.Duration // one per seen write
	written atomic.Int64    // lines on disk
	visible atomic.Int64    // lines counted by the daemon
	backlog int64           // most lines written but not yet visible at a poll
}

func (r *recorder) wrote(last int64, at time.Time) {
	r.mu.Lock()
	r.writes = append(r.writes, write{last, at})
	r.mu.Unlock()
	r.written.Store(last)
}

// saw records that visible lines were counted when a poll's answer arrived at at.
func (r *recorder) saw(visible int64, at time.Time) {
	written := r.written.Load() // read before the poll's count is used: never negative
	r.visible.Store(visible)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.next < len(r.writes) && r.writes[r.next].last <= visible {
		r.latency = append(r.latency, at.Sub(r.writes[r.next].at))
		r.next++
	}
	r.backlog = max(r.backlog, written-visible)
}

func run(ctx context.Context, c config) ([][2]string, error) {
	f, err := os.OpenFile(c.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	client := &http.Client{Timeout: 5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	var rec recorder
	var p *poller
	if c.url != "" {
		base, err := requests(ctx, client, c.url)
		if err != nil {
			return nil, fmt.Errorf("first poll: %w", err)
		}
		p = startPoller(ctx, client, c, base, &rec)
		defer p.close()
	}
	n, began, stoppedAt, err := writeLines(f, c, &rec)
	if err != nil {
		return nil, err
	}
	wroteFor := stoppedAt.Sub(began)
	out := [][2]string{
		{"rate_target", fmt.Sprint(c.rate)},
		{"seconds", fmt.Sprintf("%.1f", wroteFor.Seconds())},
		{"written", fmt.Sprint(n)},
		{"rate_achieved", fmt.Sprintf("%.0f", float64(n)/wroteFor.Seconds())},
	}
	if c.url == "" {
		return out, nil
	}
	catch := "n/a"
	if caughtUp := rec.drain(n, stoppedAt, c); caughtUp >= 0 {
		catch = fmt.Sprintf("%.2f", caughtUp.Seconds())
	}
	pollErrs := p.close()
	out = append(out, rec.latencies()...)
	return append(out, [2]string{"catchup_s", catch}, [2]string{"poll_errors", fmt.Sprint(pollErrs)}), nil
}

// writeLines writes c.rate lines a second to f for c.duration, on a
// schedule: at each tick, every line due by now. A late tick writes more,
// so the rate holds over the run. It returns how many lines it wrote, and
// when it began and stopped.
func writeLines(f *os.File, c config, rec *recorder) (n int64, began, stopped time.Time, err error) {
	began = time.Now()
	g := loggen.New(loggen.Config{Seed: c.seed, Start: began, Step: time.Second / time.Duration(c.rate),
		Hosts: 20_000, Paths: 2_000})
	end := began.Add(c.duration)
	t := time.NewTicker(c.tick)
	defer t.Stop()
	var buf []byte
	for now := began; now.Before(end); now = <-t.C {
		due := int64(now.Sub(began).Seconds() * float64(c.rate))
		buf = buf[:0]
		for ; n < due; n++ {
			buf = g.Line(buf)
		}
		if len(buf) == 0 {
			continue
		}
		if _, err := f.Write(buf); err != nil {
			return n, began, time.Now(), err
		}
		rec.wrote(n, time.Now())
	}
	return n, began, time.Now(), nil
}

// poller polls the daemon's request count, every c.poll on a goroutine of
// its own, and tells a recorder what it saw.
type poller struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	errs   atomic.Int64
}

// startPoller starts polling c.url; base is the request count before the
// first line was written.
func startPoller(ctx context.Context, client *http.Client, c config, base int64, rec *recorder) *poller {
	ctx, cancel := context.WithCancel(ctx)
	p := &poller{cancel: cancel}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(c.poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n, err := requests(ctx, client, c.url)
			if err != nil {
				p.errs.Add(1)
				continue
			}
			rec.saw(n-base, time.Now())
		}
	}()
	return p
}

// close stops polling, waits for the poll under way, and returns how many
// polls failed.
func (p *poller) close() int64 {
	p.cancel()
	p.done.Wait()
	return p.errs.Load()
}

// drain waits, at most c.drain, for the daemon to count all n lines
// written, and returns how long after stoppedAt that was, or -1.
func (r *recorder) drain(n int64, stoppedAt time.Time, c config) time.Duration {
	deadline := time.After(c.drain)
	for {
		if r.visible.Load() >= n {
			return time.Since(stoppedAt)
		}
		select {
		case <-deadline:
			return -1
		case <-time.After(c.poll):
		}
	}
}

// latencies returns what the polls saw of the writes: how many there were,
// how long each took to become visible (percentiles), and the largest
// backlog. It is called once polling stopped.
func (r *recorder) latencies() [][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := slices.Clone(r.latency)
	slices.Sort(lat)
	unseen := len(r.writes) - r.next
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	pct := func(p float64) string {
		// Writes never seen count as slower than any seen one.
		total := len(lat) + unseen
		i := int(p*float64(total)+0.999999) - 1
		if total == 0 || i >= len(lat) {
			return "n/a"
		}
		return ms(lat[max(i, 0)])
	}
	maxLat := "n/a"
	if len(lat) > 0 && unseen == 0 {
		maxLat = ms(lat[len(lat)-1])
	}
	return [][2]string{
		{"visible", fmt.Sprint(r.visible.Load())},
		{"writes", fmt.Sprint(len(r.writes))},
		{"unseen_writes", fmt.Sprint(unseen)},
		{"p50_ms", pct(0.50)},
		{"p99_ms", pct(0.99)},
		{"max_ms", maxLat},
		{"backlog_max_lines", fmt.Sprint(r.backlog)},
	}
}

// requests returns the window's request count from /api/v1/stats.
func requests(ctx context.Context, c *http.Client, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var s struct {
		Requests *int64 `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	if s.Requests == nil {
		return 0, errors.New("no requests field in /api/v1/stats")
	}
	return *s.Requests, nil
}
