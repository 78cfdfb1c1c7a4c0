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
	var mu sync.Mutex
	codes := map[string]int{}
	var latencies []time.Duration // of 200s
	var bytes int64
	end := time.Now().Add(*duration)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range *clients {
		url := "http://" + *addr + queries[i%len(queries)]
		wg.Go(func() {
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
				mu.Lock()
				codes[code]++
				if code == "200" {
					latencies = append(latencies, time.Since(t))
					bytes += n
				}
				mu.Unlock()
				if err != nil {
					wait = 100 * time.Millisecond
				}
				time.Sleep(min(wait, time.Until(end)))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began).Seconds()
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(p*float64(len(latencies)-1))]
	}
	var names []string
	for c := range codes {
		names = append(names, c)
	}
	slices.Sort(names)
	var parts []string
	for _, c := range names {
		parts = append(parts, fmt.Sprintf("%s: %d", c, codes[c]))
	}
	fmt.Printf("clients %d, %.1f s: %s\n", *clients, elapsed, strings.Join(parts, ", "))
	fmt.Printf("answered (200): %.1f req/s, p50 %s, p99 %s, max %s, %.1f MB of bodies\n",
		float64(codes["200"])/elapsed, pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
		pct(1).Round(time.Millisecond), float64(bytes)/1e6)
	fmt.Printf("refused (429): %d\n", codes["429"])
	if *pid != 0 {
		fmt.Printf("daemon peak RSS (VmHWM): %s\n", procStatus(*pid, "VmHWM"))
	}
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
