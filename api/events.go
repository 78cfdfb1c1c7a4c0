package api

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/logtally/logtally"
)

// Limits and cadence of the event stream.
const (
	// DefaultMaxStreams is how many event streams are served at once unless
	// configured otherwise.
	DefaultMaxStreams = 1000
	// DefaultStreamSendTimeout is how long one event may take to be written
	// to a client before the client is dropped.
	DefaultStreamSendTimeout = 5 * time.Second
	// MaxEventPages is the most top pages one event carries.
	MaxEventPages = 100
	// streamTick is how often the broadcaster looks for a new snapshot: no
	// client is sent more than one event per tick, however often the window
	// publishes.
	streamTick = 100 * time.Millisecond
	// streamHeartbeat is how often an idle stream gets a comment line, so
	// that proxies keep it open and a vanished client is noticed.
	streamHeartbeat = 15 * time.Second
)

// ErrTooManyStreams means --max-streams event streams are already open.
var ErrTooManyStreams = errors.New("too many event streams")

// ErrClosed means the API is shutting down and opens no more streams.
var ErrClosed = errors.New("api closed")

// LiveBody is the data of each "snapshot" event of GET /api/v1/events: the
// body of /api/v1/stats with the window's top pages.
type LiveBody struct {
	Stats
	Pages []logtally.PageCount `json:"pages"`
}

// streams keeps the open event streams and wakes them when the window
// publishes a new snapshot.
//
// Publishing belongs to ingest and never waits on a client: a broadcaster
// goroutine compares the snapshot pointer every streamTick (the snapshot
// is immutable, so a new pointer is a new publish) and does a non-blocking
// send on each client's wake channel, whose buffer of one coalesces wakes.
// A client's handler then writes the latest rendered event, shared by all
// clients, under a write deadline: a client holds no more than one
// pending wake, and one that cannot take an event within the send timeout
// is dropped. The broadcaster runs only while some stream is open.
type streams struct {
	max      int
	snapshot func() *logtally.Snapshot
	prepare  func() // renders the new snapshot's event once, before the wakes

	mu      sync.Mutex
	clients map[chan struct{}]struct{}
	running bool // the broadcaster is running
	closed  bool
	done    chan struct{} // closed by close: every stream ends
	wg      sync.WaitGroup
}

func newStreams(max int, snapshot func() *logtally.Snapshot, prepare func()) *streams {
	return &streams{max: max, snapshot: snapshot, prepare: prepare,
		clients: make(map[chan struct{}]struct{}), done: make(chan struct{})}
}

// join registers a stream and returns its wake channel.
func (h *streams) join() (chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if len(h.clients) >= h.max {
		return nil, ErrTooManyStreams
	}
	wake := make(chan struct{}, 1)
	h.clients[wake] = struct{}{}
	h.wg.Add(1) // the stream's handler
	if !h.running {
		h.running = true
		h.wg.Add(1)
		go h.broadcast(h.snapshot())
	}
	return wake, nil
}

// leave unregisters a stream whose handler is returning.
func (h *streams) leave(wake chan struct{}) {
	h.mu.Lock()
	delete(h.clients, wake)
	h.mu.Unlock()
	h.wg.Done()
}

// open returns how many streams are open.
func (h *streams) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// broadcast wakes every stream when the snapshot changes, until no stream
// is left or the streams are closed.
func (h *streams) broadcast(last *logtally.Snapshot) {
	defer h.wg.Done()
	t := time.NewTicker(streamTick)
	defer t.Stop()
	for {
		select {
		case <-h.done:
			h.mu.Lock()
			h.running = false
			h.mu.Unlock()
			return
		case <-t.C:
		}
		snap := h.snapshot()
		changed := snap != last
		if changed {
			last = snap
			h.prepare()
		}
		h.mu.Lock()
		if len(h.clients) == 0 {
			h.running = false // a later join starts a new broadcaster
			h.mu.Unlock()
			return
		}
		if changed {
			for wake := range h.clients {
				select {
				case wake <- struct{}{}:
				default: // a wake is pending already: coalesced
				}
			}
		}
		h.mu.Unlock()
	}
}

// close ends every stream, stops the broadcaster and waits for them.
func (h *streams) close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// Close ends the event streams and waits for their handlers to return.
// http.Server.Shutdown does not end a response that never finishes, so
// whoever runs the server calls Close when shutting down (for example with
// http.Server.RegisterOnShutdown). The other endpoints keep answering.
func (s *Server) Close() {
	if s.streams != nil {
		s.streams.close()
	}
}

// events answers GET /api/v1/events: a Server-Sent Events stream with a
// "snapshot" event (a LiveBody) at once and after each publish of the
// window, at most one every 100 ms. limit (1 to MaxEventPages, default
// DefaultPagesLimit) is how many top pages each event carries.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if s.streams == nil {
		writeError(w, http.StatusNotFound, "the event stream is off (--max-streams 0)")
		return
	}
	if err := onlyParams(r, []string{"limit"}); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit, err := intParam(r, "limit", DefaultPagesLimit, 1, MaxEventPages)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	wake, err := s.streams.join()
	switch {
	case errors.Is(err, ErrTooManyStreams):
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusServiceUnavailable,
			"too many event streams ("+strconv.Itoa(s.cfg.MaxStreams)+"): poll /api/v1/stats instead")
		return
	case err != nil:
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	defer s.streams.leave(wake)

	rc := http.NewResponseController(w)
	// The server's read timeout would end the request, and with it the
	// stream, a few seconds in: nothing more is read from a stream's client.
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events on as they come
	w.WriteHeader(http.StatusOK)

	// send writes b under the send timeout; an error drops the client.
	send := func(b []byte) error {
		if err := rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamSendTimeout)); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if send(retryField) != nil {
		return
	}
	var last *logtally.Snapshot
	sendLatest := func() error {
		c := s.live()
		if c == nil || c.snap == last {
			return nil
		}
		last = c.snap
		return send(c.eventBody(limit))
	}
	if sendLatest() != nil {
		return
	}
	heartbeat := time.NewTicker(streamHeartbeat)
	defer heartbeat.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.streams.done:
			return
		case <-wake:
			err = sendLatest()
		case <-heartbeat.C:
			err = send(heartbeatComment)
		}
		if err != nil {
			return
		}
	}
}

var (
	retryField       = []byte("retry: 3000\n\n")
	heartbeatComment = []byte(": heartbeat\n\n")
)

// eventBody returns the snapshot's event with the top limit pages, made
// once per snapshot and limit and shared by every stream.
func (c *rendered) eventBody(limit int) []byte {
	if b, ok := c.events.Load(limit); ok {
		return b.([]byte)
	}
	snap := c.snap
	top := snap.Pages[:min(limit, len(snap.Pages))]
	if top == nil {
		top = []logtally.PageCount{}
	}
	st := statsOf(snap)
	st.AsOf = c.asOf
	data := newBody(LiveBody{Stats: st, Pages: top}).data // ends in a newline
	ev := make([]byte, 0, len(data)+len("event: snapshot\ndata: \n"))
	ev = append(ev, "event: snapshot\ndata: "...)
	ev = append(ev, data...)
	ev = append(ev, '\n')
	b, _ := c.events.LoadOrStore(limit, ev)
	return b.([]byte)
}
