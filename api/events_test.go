package api

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/poll"
)

// streamServer serves s over real HTTP with short read and write timeouts,
// so that a stream that outlives them shows it is not cut by them.
func streamServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(s)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Config.WriteTimeout = 300 * time.Millisecond
	srv.Config.RegisterOnShutdown(s.Close)
	srv.Start()
	t.Cleanup(func() {
		s.Close()
		srv.Close()
	})
	return srv
}

// eventReader reads "snapshot" events from a stream.
type eventReader struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

func openStream(t *testing.T, url string) *eventReader {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s %s", url, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	return &eventReader{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// next returns the data of the next snapshot event, skipping comments and
// other fields.
func (e *eventReader) next() (LiveBody, error) {
	event := ""
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return LiveBody{}, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "snapshot":
			var b LiveBody
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &b); err != nil {
				return LiveBody{}, fmt.Errorf("event data %q: %w", line, err)
			}
			return b, nil
		}
	}
}

// mustNext is next, failing the test on an error or when no event comes
// within eventWait: a stream that is never woken fails rather than hangs.
func (e *eventReader) mustNext() LiveBody {
	e.t.Helper()
	type read struct {
		b   LiveBody
		err error
	}
	got := make(chan read, 1) // the reader, if abandoned, ends when the body is closed
	go func() {
		b, err := e.next()
		got <- read{b, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			e.t.Fatalf("reading the stream: %v", r.err)
		}
		return r.b
	case <-time.After(eventWait):
		e.t.Fatalf("no event within %s", eventWait)
		return LiveBody{}
	}
}

// eventWait is how long mustNext waits for an event: far longer than any
// wake-up takes, so that only a stream that is never woken reaches it.
const eventWait = 30 * time.Second

func snapshot(requests int64, pages ...logtally.PageCount) *logtally.Snapshot {
	return &logtally.Snapshot{From: time.Unix(1000, 0).UTC(), To: time.Unix(1600, 0).UTC(), Length: 10 * time.Minute,
		Requests: requests, PageViews: requests / 2, Visitors: 1, Pages: pages}
}

// publisher holds a value, as a window holds its snapshot or the fleet's
// refresher its View, and publishes each new one as they do: a channel
// taken before a read is closed by the next Store.
type publisher[T any] struct {
	v    atomic.Pointer[T]
	mu   sync.Mutex
	next chan struct{}
}

func (p *publisher[T]) Load() *T { return p.v.Load() }

func (p *publisher[T]) Store(v *T) {
	p.v.Store(v)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next != nil {
		close(p.next)
		p.next = nil
	}
}

func (p *publisher[T]) Published() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == nil {
		p.next = make(chan struct{})
	}
	return p.next
}

// streamDeps are the deps of a server over a published snapshot.
func streamDeps(snap *publisher[logtally.Snapshot]) Deps {
	return Deps{Snapshot: snap.Load, Published: snap.Published}
}

func TestEventsFollowPublishes(t *testing.T) {
	var snap publisher[logtally.Snapshot]
	snap.Store(snapshot(1, logtally.PageCount{Path: "/a", PageViews: 3}, logtally.PageCount{Path: "/b", PageViews: 2}))
	s := New(Config{MaxStreams: 10}, streamDeps(&snap))
	srv := streamServer(t, s)

	stream := openStream(t, srv.URL+"/api/v1/events?limit=1")
	got := stream.mustNext()
	if got.Requests != 1 || got.WindowSeconds != 600 || len(got.Pages) != 1 || got.Pages[0].Path != "/a" {
		t.Errorf("first event = %+v, want the snapshot with its top page", got)
	}
	// The same JSON as /api/v1/stats, with pages.
	stats := do(s, "GET", "/api/v1/stats", nil).Body.String()
	if want := strings.TrimSuffix(stats, "}\n") + `,"pages":[{"path":"/a","pageviews":3}]}`; !strings.Contains(
		string(s.live().eventBody(1)), "data: "+want+"\n\n") {
		t.Errorf("event = %q, want the stats body with pages: %s", s.live().eventBody(1), want)
	}

	// Past the server's read and write timeouts, each publish still comes.
	time.Sleep(2 * srv.Config.WriteTimeout)
	for i := int64(2); i <= 4; i++ {
		snap.Store(snapshot(i))
		if got := stream.mustNext(); got.Requests != i || got.Pages == nil {
			t.Fatalf("after publish %d: event %+v", i, got)
		}
	}
}

func TestEventsCoalesce(t *testing.T) {
	var snap publisher[logtally.Snapshot]
	snap.Store(snapshot(0))
	s := New(Config{MaxStreams: 10}, streamDeps(&snap))
	srv := streamServer(t, s)
	stream := openStream(t, srv.URL+"/api/v1/events")
	stream.mustNext()

	// Publish as fast as possible for a while: the client gets the latest
	// snapshot at most once per tick, never a backlog of every publish.
	const publishes = 5000
	began := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i <= publishes; i++ {
			snap.Store(snapshot(i))
			if i%10 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	events := 0
	for {
		got := stream.mustNext()
		events++
		if got.Requests == publishes {
			break
		}
	}
	<-done
	elapsed := time.Since(began)
	if most := int(elapsed/minEventGap) + 2; events > most {
		t.Errorf("%d events in %s for %d publishes, want at most %d (one per %s)", events, elapsed, publishes, most, minEventGap)
	}
}

func TestEventsMaxStreams(t *testing.T) {
	var snap publisher[logtally.Snapshot]
	snap.Store(snapshot(1))
	s := New(Config{MaxStreams: 2}, streamDeps(&snap))
	srv := streamServer(t, s)

	a := openStream(t, srv.URL+"/api/v1/events")
	openStream(t, srv.URL+"/api/v1/events")
	resp, err := http.Get(srv.URL + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"error":"too many event streams (2): poll /api/v1/stats instead"}` + "\n"
	if resp.StatusCode != 503 || string(body) != want || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("third stream: %s %q %s, want 503 %s with Retry-After", resp.Status, body, resp.Header, want)
	}

	a.resp.Body.Close() // a client leaves: its place is free again
	poll.Until(t, "the stream to be let go", func() bool { return s.streams.open() == 1 })
	openStream(t, srv.URL+"/api/v1/events").mustNext()
}

// TestEventsDropSlowClient keeps one client that never reads next to one
// that does: the slow one is dropped once a write to it takes longer than
// the send timeout, and the other keeps getting every publish meanwhile.
func TestEventsDropSlowClient(t *testing.T) {
	big := make([]logtally.PageCount, MaxEventPages)
	for i := range big {
		big[i] = logtally.PageCount{Path: "/" + strings.Repeat("x", 8000), PageViews: int64(i)}
	}
	var snap publisher[logtally.Snapshot]
	snap.Store(snapshot(0, big...))
	s := New(Config{MaxStreams: 10, StreamSendTimeout: 200 * time.Millisecond}, streamDeps(&snap))
	srv := streamServer(t, s)

	// The slow client: a small receive buffer, and it never reads.
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	slow, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /api/v1/events?limit=100 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	fast := openStream(t, srv.URL+"/api/v1/events?limit=1")
	fast.mustNext()
	poll.Until(t, "both streams open", func() bool { return s.streams.open() == 2 })

	for i := int64(1); s.streams.open() == 2; i++ {
		snap.Store(snapshot(i, big...)) // publishing never waits on a client
		if got := fast.mustNext(); got.Requests != i {
			t.Fatalf("fast client got %d, want %d", got.Requests, i)
		}
		if i > 200 {
			t.Fatal("the slow client was never dropped")
		}
	}
	snap.Store(snapshot(1_000_000, big...))
	if got := fast.mustNext(); got.Requests != 1_000_000 {
		t.Errorf("after the drop the fast client got %d", got.Requests)
	}
}

func TestEventsEndAtShutdown(t *testing.T) {
	var snap publisher[logtally.Snapshot]
	snap.Store(snapshot(1))
	s := New(Config{MaxStreams: 10}, streamDeps(&snap))
	srv := streamServer(t, s)
	stream := openStream(t, srv.URL+"/api/v1/events")
	stream.mustNext()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a stream open: %v", err)
	}
	if _, err := stream.next(); err != io.EOF {
		t.Errorf("the stream ended with %v, want EOF", err)
	}
	if r := do(s, "GET", "/api/v1/events", nil); r.Code != 503 {
		t.Errorf("a stream after Close: %d, want 503", r.Code)
	}
	s.Close() // Shutdown runs it too, but does not wait for it
	if n := s.streams.running(); n != 0 {
		t.Errorf("%d broadcasters still run after Close", n)
	}
}

func TestEventsBroadcasterStopsWithLastClient(t *testing.T) {
	var snap publisher[logtally.Snapshot]
	snap.Store(snapshot(1))
	s := New(Config{MaxStreams: 10}, streamDeps(&snap))
	srv := streamServer(t, s)
	for range 2 {
		stream := openStream(t, srv.URL+"/api/v1/events")
		stream.mustNext()
		stream.resp.Body.Close()
		poll.Until(t, "the broadcaster to stop", func() bool { return s.streams.running() == 0 && s.streams.open() == 0 })
	}
}

func TestEventsErrors(t *testing.T) {
	snap := snapshot(1)
	on := New(Config{MaxStreams: 1}, Deps{Snapshot: func() *logtally.Snapshot { return snap }})
	off := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return snap }})
	tests := []struct {
		s      *Server
		target string
		status int
		body   string
	}{
		{on, "/api/v1/events?limit=0", 400, `{"error":"limit must be an integer from 1 to 100"}`},
		{on, "/api/v1/events?x=1", 400, `{"error":"unknown query parameter \"x\""}`},
		{off, "/api/v1/events", 404, `{"error":"the event stream is off (--max-streams 0)"}`},
	}
	for _, tt := range tests {
		r := do(tt.s, "GET", tt.target, nil)
		if r.Code != tt.status || r.Body.String() != tt.body+"\n" {
			t.Errorf("%s: %d %s, want %d %s", tt.target, r.Code, r.Body, tt.status, tt.body)
		}
	}
	if r := do(on, "POST", "/api/v1/events", nil); r.Code != 405 {
		t.Errorf("POST: %d, want 405", r.Code)
	}
}

func TestStreamAndDashboardFlags(t *testing.T) {
	tests := []struct {
		args       []string
		dashboard  bool
		maxStreams int
		invalid    bool
	}{
		{nil, true, DefaultMaxStreams, false},
		{[]string{"--dashboard=false", "--max-streams", "0"}, false, 0, false},
		{[]string{"--max-streams", "-1"}, true, -1, true},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("api", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c Config
		c.RegisterFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if c.Dashboard != tt.dashboard || c.MaxStreams != tt.maxStreams || c.StreamSendTimeout != DefaultStreamSendTimeout {
			t.Errorf("%q: config %+v", tt.args, c)
		}
		if err := c.Validate(); (err != nil) != tt.invalid {
			t.Errorf("%q: Validate() = %v, want an error: %t", tt.args, err, tt.invalid)
		}
	}
}
