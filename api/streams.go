package api

import (
	"errors"
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
	// minEventGap is the least time between two events of a stream: no
	// client is sent more than one event per gap, however often the
	// window publishes.
	minEventGap = 100 * time.Millisecond
	// streamHeartbeat is how often an idle stream gets a comment line, so
	// that proxies keep it open and a vanished client is noticed.
	streamHeartbeat = 15 * time.Second
)

// ErrTooManyStreams means --max-streams event streams are already open.
var ErrTooManyStreams = errors.New("too many event streams")

// ErrClosed means the API is shutting down and opens no more streams.
var ErrClosed = errors.New("api closed")

// streams keeps the open event streams and wakes them when a new snapshot
// is published.
//
// Publishing belongs to ingest (or to the fleet's refresher) and never
// waits on a client: a broadcaster goroutine waits on the channel that the
// next publish closes (Deps.Published), compares the snapshot pointer (the
// snapshot is immutable, so a new pointer is a new publish), and does a
// non-blocking send on each client's wake channel, whose buffer of one
// coalesces wakes. A client's handler then writes the latest rendered
// event, shared by all clients, under a write deadline: a client holds no
// more than one pending wake, and one that cannot take an event within the
// send timeout is dropped. The broadcaster runs only while some stream is
// open, and costs nothing between publishes.
type streams struct {
	max       int
	snapshot  func() *logtally.Snapshot
	published func() <-chan struct{} // closed at the next publish (see Server.published)
	prepare   func()                 // renders the new snapshot's event once, before the wakes

	mu           sync.Mutex
	clients      map[chan struct{}]struct{}
	quit         chan struct{} // closed when the last stream leaves: the broadcaster stops; nil while none runs
	broadcasters int           // broadcaster goroutines not yet returned
	closed       bool
	done         chan struct{} // closed by close: every stream ends
	wg           sync.WaitGroup
}

func newStreams(max int, snapshot func() *logtally.Snapshot, published func() <-chan struct{}, prepare func()) *streams {
	return &streams{max: max, snapshot: snapshot, published: published, prepare: prepare,
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
	if h.quit == nil {
		h.quit = make(chan struct{})
		h.broadcasters++
		h.wg.Add(1)
		go h.broadcast(h.snapshot(), h.quit)
	}
	return wake, nil
}

// leave unregisters a stream whose handler is returning, and stops the
// broadcaster with the last.
func (h *streams) leave(wake chan struct{}) {
	h.mu.Lock()
	delete(h.clients, wake)
	if len(h.clients) == 0 && h.quit != nil {
		close(h.quit) // a later join starts a new broadcaster
		h.quit = nil
	}
	h.mu.Unlock()
	h.wg.Done()
}

// open returns how many streams are open.
func (h *streams) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// running returns how many broadcasters run: 0 or 1, but for a moment
// after the last stream leaves and a new one joins.
func (h *streams) running() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.broadcasters
}

// broadcast wakes every stream at each new snapshot, no more often than
// once per minEventGap, until quit (the last stream left) or the streams
// are closed. last is the snapshot the streams have.
func (h *streams) broadcast(last *logtally.Snapshot, quit <-chan struct{}) {
	defer func() {
		h.mu.Lock()
		h.broadcasters--
		h.mu.Unlock()
		h.wg.Done()
	}()
	for {
		// Taken before the snapshot is read: a publish after the read
		// closes it.
		next := h.published()
		if snap := h.snapshot(); snap != last {
			last = snap
			h.prepare()
			h.wakeAll()
			if !h.wait(quit, nil, time.After(minEventGap)) {
				return
			}
			continue
		}
		if !h.wait(quit, next, nil) {
			return
		}
	}
}

// wait waits for next or after, and returns false if the broadcaster is
// to stop instead.
func (h *streams) wait(quit, next <-chan struct{}, after <-chan time.Time) bool {
	select {
	case <-h.done:
		return false
	case <-quit:
		return false
	case <-next:
	case <-after:
	}
	return true
}

// wakeAll wakes every stream that has no wake pending.
func (h *streams) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for wake := range h.clients {
		select {
		case wake <- struct{}{}:
		default: // a wake is pending already: coalesced
		}
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
