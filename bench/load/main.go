// Command load sends GET requests to one URL at a fixed rate and reports
// their latency: an open-loop load, as a crowd of browsers polling a
// counter makes, where wrk's closed loop measures how much a saturated
// machine can answer.
//
// The one idea: each request has an intended send time on a fixed schedule
// (rate requests per second, spread over -conns connections). When the
// server's slowness made a request go late (the previous response on its
// connection came after the request's time), its latency is measured from
// that intended time: a stall counts against every request it delayed, as
// it would for real clients, instead of silently lowering the rate
// (coordinated omission). When the generator itself woke up late, that is
// not the server's doing: latency is measured from the actual send, and
// the request is counted as client_late, which should stay near zero for
// the figures to mean anything.
//
//	go run ./bench/load -url http://127.0.0.1:8080/api/v1/stats -rate 30000 -duration 10s
//
// Requests go over plain keep-alive HTTP/1.1 connections with a minimal
// client of its own: net/http's client costs several times the server's
// work per request, and on a small machine the load generator's own delays
// would be what is measured.
//
// It prints one key=value per line, each key prefixed by -prefix, for
// bench/run to collect.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	var c config
	flag.StringVar(&c.url, "url", "", "URL to GET")
	flag.IntVar(&c.rate, "rate", 30_000, "requests per second, in all")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send")
	flag.IntVar(&c.conns, "conns", 16, "connections; each sends its share of the schedule in turn")
	flag.StringVar(&c.prefix, "prefix", "load_", "prefix of every printed key")
	flag.Parse()
	if c.url == "" || c.rate <= 0 || c.duration <= 0 || c.conns <= 0 {
		fmt.Fprintln(os.Stderr, "load: -url, and positive -rate, -duration and -conns, are required")
		os.Exit(2)
	}
	res, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	for _, kv := range res {
		fmt.Printf("%s%s=%s\n", c.prefix, kv[0], kv[1])
	}
}

type config struct {
	url      string
	rate     int
	duration time.Duration
	conns    int
	prefix   string
}

// worker is one connection's share: requests k, k+conns, k+2*conns, ...
type worker struct {
	latencies []time.Duration // to the end of the body, see the package comment
	lastSend  time.Time
	errors    int
	late      int // requests the generator sent more than a millisecond late
}

// schedule is when each request is meant to be sent: request i at
// start + i*interval, for i below total.
type schedule struct {
	start    time.Time
	interval time.Duration
	total    int
}

func run(c config) ([][2]string, error) {
	u, err := url.Parse(c.url)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("-url %q: want http://host:port/path", c.url)
	}
	conns, err := dial(c, u)
	defer func() {
		for _, cn := range conns {
			cn.c.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	s := schedule{
		total:    int(int64(c.rate) * int64(c.duration) / int64(time.Second)),
		interval: time.Second / time.Duration(c.rate),
		start:    time.Now().Add(10 * time.Millisecond),
	}
	workers := make([]worker, c.conns)
	var wg sync.WaitGroup
	for k := range workers {
		w := &workers[k]
		w.latencies = make([]time.Duration, 0, s.total/c.conns+1)
		wg.Go(func() { w.send(conns[k], s, k, c.conns) })
	}
	wg.Wait()
	return summary(c, s, workers), nil
}

// dial opens c.conns connections to u and sends one request on each, so
// that a wrong URL fails loudly rather than as a run of errors. It returns
// the connections it opened, also with an error.
func dial(c config, u *url.URL) ([]*conn, error) {
	request := []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: logtally-bench-load\r\n\r\n")
	var conns []*conn
	for range c.conns {
		nc, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if err != nil {
			return conns, err
		}
		cn := &conn{c: nc, r: bufio.NewReaderSize(nc, 16<<10), request: request}
		conns = append(conns, cn)
		if err := cn.get(); err != nil {
			return conns, fmt.Errorf("GET %s: %w", c.url, err)
		}
	}
	return conns, nil
}

// send sends requests k, k+step, k+step*2, ... of s on cn, each at its time.
func (w *worker) send(cn *conn, s schedule, k, step int) {
	for i := k; i < s.total; i += step {
		at := s.start.Add(time.Duration(i) * s.interval)
		from := at // held up by the server: from the intended time
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
			if from = time.Now(); from.Sub(at) > time.Millisecond {
				w.late++
			}
		}
		w.lastSend = time.Now()
		err := cn.get()
		w.latencies = append(w.latencies, time.Since(from))
		if err != nil {
			w.errors++
			if cn.broken {
				return // the rest of its share is not sent, so rate_achieved shows it
			}
		}
	}
}

// summary returns the rate achieved, the errors and the latencies of the
// workers.
func summary(c config, s schedule, workers []worker) [][2]string {
	// The rate sent: requests over the time from the schedule's start to
	// the last send, plus one interval (the last request's share).
	var last time.Time
	var all []time.Duration
	errors, late := 0, 0
	for _, w := range workers {
		if w.lastSend.After(last) {
			last = w.lastSend
		}
		all = append(all, w.latencies...)
		errors += w.errors
		late += w.late
	}
	elapsed := last.Sub(s.start) + s.interval
	slices.Sort(all)
	q := func(p float64) string {
		if len(all) == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.3f", float64(all[min(len(all)-1, int(p*float64(len(all))))])/1e6)
	}
	return [][2]string{
		{"rate_target", fmt.Sprint(c.rate)},
		{"rate_achieved", fmt.Sprintf("%.0f", float64(len(all))/elapsed.Seconds())},
		{"requests", fmt.Sprint(len(all))},
		{"errors", fmt.Sprint(errors)},
		{"client_late", fmt.Sprint(late)},
		{"conns", fmt.Sprint(c.conns)},
		{"p50_ms", q(0.50)},
		{"p90_ms", q(0.90)},
		{"p99_ms", q(0.99)},
		{"p999_ms", q(0.999)},
		{"max_ms", q(1)},
	}
}

// conn is one keep-alive connection.
type conn struct {
	c       net.Conn
	r       *bufio.Reader
	request []byte
	broken  bool
}

// get sends the request and reads the whole response; a status other than
// 200 is an error. A response it cannot read leaves the connection broken.
func (c *conn) get() error {
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(c.request); err != nil {
		c.broken = true
		return err
	}
	status, err := c.r.ReadSlice('\n')
	if err != nil || len(status) < 12 {
		c.broken = true
		return fmt.Errorf("status line %q: %v", status, err)
	}
	ok := string(status[9:12]) == "200"
	length, chunked := -1, false
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			c.broken = true
			return err
		}
		if len(h) <= 2 {
			break
		}
		name, value, _ := strings.Cut(strings.TrimSpace(string(h)), ":")
		switch strings.ToLower(name) {
		case "content-length":
			length, err = strconv.Atoi(strings.TrimSpace(value))
			if err != nil {
				c.broken = true
				return err
			}
		case "transfer-encoding":
			chunked = strings.Contains(strings.ToLower(value), "chunked")
		}
	}
	if err := c.body(length, chunked); err != nil {
		c.broken = true
		return err
	}
	if !ok {
		return fmt.Errorf("status %q", strings.TrimSpace(string(status)))
	}
	return nil
}

func (c *conn) body(length int, chunked bool) error {
	if !chunked {
		if length < 0 {
			return errors.New("response without a length")
		}
		_, err := c.r.Discard(length)
		return err
	}
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(strings.TrimSpace(string(line)), 16, 32)
		if err != nil {
			return err
		}
		if _, err := c.r.Discard(int(size) + 2); err != nil { // the chunk and its CRLF
			return err
		}
		if size == 0 {
			return nil
		}
	}
}
