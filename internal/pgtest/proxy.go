package pgtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy stands between clients and a Server and can lose the reply to a
// COMMIT: the one fault a retry cannot tell from a failed transaction. It
// forwards the COMMIT, cuts the client's connection at once, and lets the
// server finish the commit unheard. It understands only plain connections
// (sslmode=disable, as URL says).
//
// The client hears of the cut before the proxy has read the server's
// reply, so a test that counts the lost replies waits for them (AwaitLost)
// rather than reads the count once. A client that sees its connection cut
// may send a cancel request for it (pgconn does); the proxy drops those of
// the connections it cut, as the network that lost the reply would: had
// one reached the server before the COMMIT, the transaction would roll
// back, and the fault would be a failed commit instead.
type Proxy struct {
	target string // the server's host:port
	url    url.URL
	ln     net.Listener
	lose   atomic.Int64 // COMMIT replies still to lose

	lostMu  sync.Mutex
	lost    int
	changed chan struct{} // closed and made anew when lost grows

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	silenced map[uint32]bool // backends (process IDs) whose COMMIT reply was lost
	wg       sync.WaitGroup
}

// link is one client connection through the proxy.
type link struct {
	client, server net.Conn
	cut            chan struct{} // closed when the reply to a COMMIT is to be lost
	pid            atomic.Uint32 // the server backend's process ID, once it said (BackendKeyData)
}

// Proxy starts a proxy to the server's postgres database (see NewProxy).
// The server may be restarted behind it.
func (s *Server) Proxy(tb testing.TB) *Proxy {
	tb.Helper()
	return NewProxy(tb, s.URL())
}

// NewProxy starts a proxy on a free loopback port to the server and
// database of target, a URL as Server.URL or Database returns; it is
// closed when the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatalf("pgtest: proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: proxy: %v", err)
	}
	p := &Proxy{target: u.Host, url: *u, ln: ln, changed: make(chan struct{}), conns: map[net.Conn]struct{}{},
		silenced: map[uint32]bool{}}
	p.url.Host = ln.Addr().String()
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// URL returns the URL of the proxy's database, through the proxy.
func (p *Proxy) URL() string { return p.url.String() }

// LoseCommitReplies makes the proxy lose the replies to the next n COMMITs
// sent through it, whichever connection sends them.
func (p *Proxy) LoseCommitReplies(n int) { p.lose.Add(int64(n)) }

// Lost returns how many COMMIT replies the proxy has lost so far: a reply
// counts once the server has sent all of it, which may be after the client
// saw its connection cut.
func (p *Proxy) Lost() int {
	p.lostMu.Lock()
	defer p.lostMu.Unlock()
	return p.lost
}

// AwaitLost waits until the proxy has lost n COMMIT replies, and returns
// nil, or until ctx is done, and returns an error that says how many it
// lost.
func (p *Proxy) AwaitLost(ctx context.Context, n int) error {
	for {
		p.lostMu.Lock()
		lost, changed := p.lost, p.changed
		p.lostMu.Unlock()
		if lost >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("pgtest: %d COMMIT replies lost, waiting for %d: %w", lost, n, ctx.Err())
		}
	}
}

// addLost counts a lost reply and wakes whoever waits in AwaitLost.
func (p *Proxy) addLost() {
	p.lostMu.Lock()
	defer p.lostMu.Unlock()
	p.lost++
	close(p.changed)
	p.changed = make(chan struct{})
}

// Close stops accepting, cuts every connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		p.wg.Add(2)
		l := &link{client: client, server: server, cut: make(chan struct{})}
		go func() {
			defer p.wg.Done()
			p.fromClient(l)
		}()
		go func() {
			defer p.wg.Done()
			p.fromServer(l)
		}()
	}
}

// cancelRequestCode is the code of a CancelRequest, in the place of a
// startup message's protocol version.
const cancelRequestCode = 80877102

// fromClient forwards the client's messages to the server. When it
// forwards a COMMIT whose reply is to be lost, it closes l.cut and the
// client's connection. It drops a cancel request for a backend whose
// COMMIT reply was lost.
func (p *Proxy) fromClient(l *link) {
	client, server := l.client, l.server
	defer client.Close()
	r := bufio.NewReader(client)
	var msg []byte
	// The startup message, or a cancel request, has no type byte.
	if err := forward(r, nil, false, &msg); err != nil {
		server.Close()
		return
	}
	if len(msg) == 16 && binary.BigEndian.Uint32(msg[4:]) == cancelRequestCode && p.isSilenced(binary.BigEndian.Uint32(msg[8:])) {
		server.Close()
		return
	}
	if _, err := server.Write(msg); err != nil {
		return
	}
	for {
		msg = msg[:0]
		if err := forward(r, nil, true, &msg); err != nil {
			server.Close()
			return
		}
		commit := msg[0] == 'Q' && strings.EqualFold(strings.TrimRight(string(msg[5:]), "\x00; \n"), "commit")
		if commit && p.lose.Add(-1) >= 0 {
			p.silence(l.pid.Load()) // before the client can see the cut
			close(l.cut)            // before the server can answer
			server.Write(msg)
			return
		} else if commit {
			p.lose.Add(1)
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

func (p *Proxy) silence(pid uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silenced[pid] = true
}

func (p *Proxy) isSilenced(pid uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.silenced[pid]
}

// fromServer forwards the server's messages to the client until l.cut;
// then it reads the rest of the reply, unforwarded, up to ReadyForQuery,
// so the server finishes the commit, and closes the server's connection.
// It notes the backend's process ID as it goes by.
func (p *Proxy) fromServer(l *link) {
	server, client, cut := l.server, l.client, l.cut
	defer server.Close()
	r := bufio.NewReader(server)
	var msg []byte
	for {
		msg = msg[:0]
		err := forward(r, nil, true, &msg)
		select {
		case <-cut:
			if err == nil && msg[0] != 'Z' {
				continue
			}
			if err == nil {
				p.addLost()
			}
			return
		default:
		}
		if err != nil {
			client.Close()
			return
		}
		if msg[0] == 'K' && len(msg) >= 9 { // BackendKeyData: process ID, secret key
			l.pid.Store(binary.BigEndian.Uint32(msg[5:]))
		}
		if _, err := client.Write(msg); err != nil {
			return
		}
	}
}

// forward reads one protocol message (with a type byte if typed) from r,
// and writes it to w or appends it to buf.
func forward(r *bufio.Reader, w io.Writer, typed bool, buf *[]byte) error {
	var head []byte
	if typed {
		t, err := r.ReadByte()
		if err != nil {
			return err
		}
		head = append(head, t)
	}
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size < 4 || size > 1<<30 {
		return fmt.Errorf("message of %d bytes", size)
	}
	msg := append(head, n[:]...)
	msg = append(msg, make([]byte, size-4)...)
	if _, err := io.ReadFull(r, msg[len(msg)-int(size-4):]); err != nil {
		return err
	}
	if buf != nil {
		*buf = append(*buf, msg...)
		return nil
	}
	if w == nil {
		return errors.New("nowhere to forward")
	}
	_, err := w.Write(msg)
	return err
}
