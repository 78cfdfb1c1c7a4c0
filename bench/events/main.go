// Command events holds many clients of logtally's event stream open at once,
// as a crowd of open dashboards does, and reports what they received.
//
// The one idea: each client is a plain keep-alive connection read by one
// goroutine that only counts, so a thousand of them cost the generator
// little next to the daemon it measures. Once every client is connected it
// prints events_connected=N (so that bench/run can measure the daemon while
// they are), then tries one more client, which --max-streams should refuse
// with 503, and at the end prints what the clients received.
//
//	go run ./bench/events -url http://127.0.0.1:8080/api/v1/events -clients 1000 -duration 20s
//
// It prints one key=value per line, each key prefixed by -prefix, for
// bench/run to collect.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"
)

func main() {
	var c config
	flag.StringVar(&c.url, "url", "", "the daemon's /api/v1/events URL")
	flag.IntVar(&c.clients, "clients", 1000, "clients to hold connected")
	flag.DurationVar(&c.duration, "duration", 20*time.Second, "how long to hold them once all are connected")
	flag.BoolVar(&c.overLimit, "over-limit", true, "once all are connected, try one more and report its status")
	flag.StringVar(&c.prefix, "prefix", "events_", "prefix of every printed key")
	flag.Parse()
	if c.url == "" || c.clients <= 0 || c.duration <= 0 {
		fmt.Fprintln(os.Stderr, "events: -url, and positive -clients and -duration, are required")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "events:", err)
		os.Exit(1)
	}
}

type config struct {
	url       string
	clients   int
	duration  time.Duration
	overLimit bool
	prefix    string
}

// client is one open stream.
type client struct {
	conn   net.Conn
	r      *bufio.Reader
	events int           // "snapshot" events received
	bytes  int64         // bytes received
	maxGap time.Duration // longest time between two events
	ended  bool          // the daemon ended the stream before the end
}

func run(c config) error {
	u, err := url.Parse(c.url)
	if err != nil || u.Scheme != "http" {
		return fmt.Errorf("-url %q: want http://host:port/path", c.url)
	}
	request := []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nAccept: text/event-stream\r\nUser-Agent: logtally-bench-events\r\n\r\n")
	began := time.Now()
	clients, err := connect(c, u.Host, request)
	defer func() {
		for _, cl := range clients {
			cl.conn.Close()
		}
	}()
	if err != nil {
		return err
	}
	connectSecs := time.Since(began).Seconds()
	fmt.Printf("%sconnected=%d\n", c.prefix, len(clients))
	os.Stdout.Sync()

	overStatus := "n/a"
	if c.overLimit {
		if extra, status, err := open(u.Host, request); err != nil {
			overStatus = "error: " + err.Error()
		} else {
			overStatus = fmt.Sprint(status)
			extra.conn.Close()
		}
	}

	end := time.Now().Add(c.duration)
	var wg sync.WaitGroup
	for _, cl := range clients {
		cl.conn.SetReadDeadline(end)
		wg.Go(cl.read)
	}
	wg.Wait()
	out := append([][2]string{
		{"clients", fmt.Sprint(len(clients))},
		{"connect_s", fmt.Sprintf("%.2f", connectSecs)},
		{"over_limit_status", overStatus},
	}, received(c, clients)...)
	for _, kv := range out {
		fmt.Printf("%s%s=%s\n", c.prefix, kv[0], kv[1])
	}
	return nil
}

// connect opens c.clients streams, each of which must be accepted. It
// returns the clients it opened, also with an error.
func connect(c config, host string, request []byte) ([]*client, error) {
	var clients []*client
	for i := range c.clients {
		cl, status, err := open(host, request)
		if err != nil {
			return clients, fmt.Errorf("client %d: %w", i+1, err)
		}
		clients = append(clients, cl)
		if status != 200 {
			return clients, fmt.Errorf("client %d: status %d (is --max-streams at least %d?)", i+1, status, c.clients)
		}
	}
	return clients, nil
}

// received returns what the clients received in c.duration: events per
// client and second, the longest gaps between two events, the bytes, and
// how many streams the daemon ended early.
func received(c config, clients []*client) [][2]string {
	var events, gaps []float64
	var total int64
	ended := 0
	for _, cl := range clients {
		events = append(events, float64(cl.events)/c.duration.Seconds())
		gaps = append(gaps, cl.maxGap.Seconds()*1000)
		total += cl.bytes
		if cl.ended {
			ended++
		}
	}
	slices.Sort(events)
	slices.Sort(gaps)
	q := func(v []float64, p float64) string {
		return fmt.Sprintf("%.1f", v[min(len(v)-1, int(p*float64(len(v))))])
	}
	return [][2]string{
		{"seconds", fmt.Sprintf("%.1f", c.duration.Seconds())},
		{"per_client_per_s_min", q(events, 0)},
		{"per_client_per_s_p50", q(events, 0.5)},
		{"max_gap_ms_p50", q(gaps, 0.5)},
		{"max_gap_ms_max", q(gaps, 1)},
		{"mb_per_s", fmt.Sprintf("%.1f", float64(total)/1e6/c.duration.Seconds())},
		{"ended_early", fmt.Sprint(ended)},
	}
}

// open connects one client and reads its response's status and headers.
func open(host string, request []byte) (*client, int, error) {
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return nil, 0, err
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(request); err != nil {
		conn.Close()
		return nil, 0, err
	}
	r := bufio.NewReaderSize(conn, 16<<10)
	line, err := r.ReadSlice('\n')
	var status int
	if err == nil {
		_, err = fmt.Sscanf(string(line), "HTTP/1.1 %d", &status)
	}
	for err == nil {
		if line, err = r.ReadSlice('\n'); err == nil && len(bytes.TrimSpace(line)) == 0 {
			break
		}
	}
	if err != nil {
		conn.Close()
		return nil, 0, fmt.Errorf("reading the response: %w", err)
	}
	conn.SetDeadline(time.Time{})
	return &client{conn: conn, r: r}, status, nil
}

var snapshotEvent = []byte("event: snapshot")

// read counts events until the read deadline.
func (cl *client) read() {
	last := time.Now()
	for {
		line, err := cl.r.ReadSlice('\n')
		cl.bytes += int64(len(line))
		if err == bufio.ErrBufferFull {
			continue // a long data line: its bytes are counted, the rest follows
		}
		if err != nil {
			if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				cl.ended = true
			}
			return
		}
		if bytes.HasPrefix(line, snapshotEvent) {
			now := time.Now()
			cl.events++
			cl.maxGap = max(cl.maxGap, now.Sub(last))
			last = now
		}
	}
}
