package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/logtally/logtally"
)

// LiveBody is the data of each "snapshot" event of GET /api/v1/events: the
// body of /api/v1/stats with the window's top pages.
type LiveBody struct {
	Stats
	Pages []logtally.PageCount `json:"pages"`
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

// live returns the bodies of what the event stream carries, the default
// scope of all the daemon counts (the fleet's in fleet mode), or nil when
// there is nothing yet (before the fleet's first View).
func (s *Server) live() *rendered {
	c, err := s.own.byDefault().live()
	if err != nil {
		return nil
	}
	return c
}

// liveSnapshot is the snapshot the event stream carries, or nil.
func (s *Server) liveSnapshot() *logtally.Snapshot {
	if c := s.live(); c != nil {
		return c.snap
	}
	return nil
}

// published returns the channel that the next publish of what the event
// stream carries closes: the fleet's View in fleet mode, else this node's
// window; nil when nothing tells.
func (s *Server) published() <-chan struct{} {
	switch {
	case s.deps.Fleet != nil:
		return s.deps.Fleet.Published()
	case s.deps.Published != nil:
		return s.deps.Published()
	}
	return nil
}

// events answers GET /api/v1/events: a Server-Sent Events stream with a
// "snapshot" event (a LiveBody) at once and after each publish, at most
// one every minEventGap. limit (1 to MaxEventPages, default
// DefaultPagesLimit) is how many top pages each event carries.
func (s *Server) events(w http.ResponseWriter, r *request) error {
	if s.streams == nil {
		return notFound("the event stream is off (--max-streams 0)")
	}
	if err := r.only("limit"); err != nil {
		return err
	}
	limit, err := r.intParam("limit", DefaultPagesLimit, 1, MaxEventPages)
	if err != nil {
		return err
	}
	wake, err := s.streams.join()
	switch {
	case errors.Is(err, ErrTooManyStreams):
		return unavailable("too many event streams ("+strconv.Itoa(s.cfg.MaxStreams)+"): poll /api/v1/stats instead",
			30*time.Second)
	case err != nil:
		return unavailable("shutting down", 5*time.Second)
	}
	defer s.streams.leave(wake)
	s.stream(w, r.Request, wake, limit)
	return nil
}

var (
	retryField       = []byte("retry: 3000\n\n")
	heartbeatComment = []byte(": heartbeat\n\n")
)

// stream writes the events of one stream until its client goes, fails to
// take an event within the send timeout, or the streams are closed.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, wake <-chan struct{}, limit int) {
	e := startEvents(w, s.cfg.StreamSendTimeout, limit)
	if e.send(retryField) != nil || e.sendLatest(s.live()) != nil {
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
			err = e.sendLatest(s.live())
		case <-heartbeat.C:
			err = e.send(heartbeatComment)
		}
		if err != nil {
			return
		}
	}
}

// eventWriter writes the events of one stream.
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration      // the send timeout
	limit   int                // top pages an event carries
	last    *logtally.Snapshot // of the last event sent
}

// startEvents answers a stream's request with the headers of an event
// stream.
func startEvents(w http.ResponseWriter, timeout time.Duration, limit int) *eventWriter {
	rc := http.NewResponseController(w)
	// The server's read timeout would end the request, and with it the
	// stream, a few seconds in: nothing more is read from a stream's client.
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events on as they come
	w.WriteHeader(http.StatusOK)
	return &eventWriter{w: w, rc: rc, timeout: timeout, limit: limit}
}

// send writes b under the send timeout; an error drops the client.
func (e *eventWriter) send(b []byte) error {
	if err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout)); err != nil {
		return err
	}
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	return e.rc.Flush()
}

// sendLatest sends c's event unless it was the last sent, or c is nil.
func (e *eventWriter) sendLatest(c *rendered) error {
	if c == nil || c.snap == e.last {
		return nil
	}
	e.last = c.snap
	return e.send(c.eventBody(e.limit))
}

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
