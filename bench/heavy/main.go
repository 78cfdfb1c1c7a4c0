// Command heavy fires concurrent history queries at a running logtally for
// a while, and reports what they got and the daemon's peak memory: the
// load of many dashboards asking for a day at once.
//
//	go run ./bench/heavy -addr 127.0.0.1:8080 -pid PID -c 200 -duration 20s \
//	    -query '/api/v1/series?from=2026-11-21&to=2026-11-21&step=5m' \
//	    -query '/api/v1/series?from=2026-11-21&to=2026-11-21&step=15m'
//
// Each client sends its query (the clients take the queries in turn) again
// as soon as it has an answer; after a 429 it waits as Retry-After says, as
// the dashboard would. Peak RSS is VmHWM from /proc/PID/status.
package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	var queries []string
	addr := flag.String("addr", "127.0.0.1:8080", "the daemon's address")
	pid := flag.Int("pid", 0, "the daemon's process id, for its peak RSS (0: not reported)")
	clients := flag.Int("c", 200, "concurrent clients")
	duration := flag.Duration("duration", 20*time.Second, "how long to send")
	flag.Func("query", "a path and query to send (repeat)", func(v string) error { queries = append(queries, v); return nil })
	flag.Parse()
	if len(queries) == 0 {
		fmt.Fprintln(os.Stderr, "heavy: give at least one -query")
		os.Exit(2)
	}
	client := &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *clients, MaxConnsPerHost: *clients}}
	var got answers
	end := time.Now().Add(*duration)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range *clients {
		url := "http://" + *addr + queries[i%len(queries)]
		wg.Go(func() { ask(client, url, end, &got) })
	}
	wg.Wait()
	got.print(*clients, time.Since(began).Seconds())
	if *pid != 0 {
		fmt.Printf("daemon peak RSS (VmHWM): %s\n", procStatus(*pid, "VmHWM"))
	}
}

// answers is what the clients got, by status code; of 200s, their
// latencies and bytes.
type answers struct {
	mu        sync.Mutex
	codes     map[string]int
	latencies []time.Duration
	bytes     int64
}

// add records one answer: its code ("error" if none came), and for a 200,
// how long it took and its body's bytes.
func (a *answers) add(code string, latency time.Duration, n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.codes == nil {
		a.codes = map[string]int{}
	}
	a.codes[code]++
	if code == "200" {
		a.latencies = append(a.latencies, latency)
		a.bytes += n
	}
}

// ask sends url again as soon as it has an answer, until end; after a 429
// it waits as Retry-After says, as the dashboard would.
func ask(client *http.Client, url string, end time.Time, got *answers) {
	for time.Now().Before(end) {
		t := time.Now()
		resp, err := client.Get(url)
		code := "error"
		var wait time.Duration
		var n int64
		if err == nil {
			n, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			code = strconv.Itoa(resp.StatusCode)
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				wait = time.Duration(s) * time.Second
			}
		}
		got.add(code, time.Since(t), n)
		if err != nil {
			wait = 100 * time.Millisecond
		}
		time.Sleep(min(wait, time.Until(end)))
	}
}

// print writes the answers of clients over elapsed seconds: each code's
// count, the rate and latencies of 200s, the 429s.
func (a *answers) print(clients int, elapsed float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	slices.Sort(a.latencies)
	pct := func(p float64) time.Duration {
		if len(a.latencies) == 0 {
			return 0
		}
		return a.latencies[int(p*float64(len(a.latencies)-1))]
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(a.codes)) {
		parts = append(parts, fmt.Sprintf("%s: %d", c, a.codes[c]))
	}
	fmt.Printf("clients %d, %.1f s: %s\n", clients, elapsed, strings.Join(parts, ", "))
	fmt.Printf("answered (200): %.1f req/s, p50 %s, p99 %s, max %s, %.1f MB of bodies\n",
		float64(a.codes["200"])/elapsed, pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
		pct(1).Round(time.Millisecond), float64(a.bytes)/1e6)
	fmt.Printf("refused (429): %d\n", a.codes["429"])
}

// procStatus returns a field of /proc/PID/status.
func procStatus(pid int, field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
