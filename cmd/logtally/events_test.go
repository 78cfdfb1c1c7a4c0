package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEventStreamFollowsNewLines reads the event stream of a running daemon
// past its first event: a line appended to the log must reach an open
// stream as a new event, woken by the window's publish, with no poll by the
// client. It needs no browser, so it runs where the dashboard's tests skip.
func TestEventStreamFollowsNewLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	appendLines(t, log, line("192.0.2.1", clk.At(-time.Minute), "GET /a HTTP/1.1", 200, browser))
	m := start(t, clk.Now, "run", "--db", filepath.Join(dir, "db"), "--admin-listen", "127.0.0.1:0", log)

	resp, err := http.Get("http://" + m.Addr() + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/events: %s", resp.Status)
	}
	events := make(chan int64)
	go readRequests(resp.Body, events)

	// The first event may come before the first line is counted; wait
	// for the one that has it, then append and wait for the next.
	awaitRequests(t, events, 1)
	appendLines(t, log, line("192.0.2.2", clk.At(-time.Second), "GET /b HTTP/1.1", 200, browser))
	awaitRequests(t, events, 2)
}

// readRequests sends the request count of each snapshot event read from r,
// and closes events when the stream ends.
func readRequests(r interface{ Read([]byte) (int, error) }, events chan<- int64) {
	defer close(events)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var body struct{ Requests int64 }
		if err := json.Unmarshal([]byte(data), &body); err != nil {
			return
		}
		events <- body.Requests
	}
}

// awaitRequests reads events until one counts want requests. The stream
// sends at most one event per 100 ms, so a few seconds is ample; the
// deadline is only reached when no event comes, which is the failure.
func awaitRequests(t *testing.T, events <-chan int64, want int64) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before an event with %d requests", want)
			}
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event with %d requests on the open stream", want)
		}
	}
}
