package pgtest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
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
type Proxy struct {
	tb     testing.TB
	target string
	ln     net.Listener
	lose   atomic.Int64 // COMMIT replies still to lose
	lost   atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Proxy starts a proxy to the server on a free loopback port; it is closed
// when the test ends. The server may be restarted behind it.
func (s *Server) Proxy(tb testing.TB) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: proxy: %v", err)
	}
	p := &Proxy{tb: tb, target: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// URL returns the URL of the server's postgres database through the proxy.
func (p *Proxy) URL() string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: p.ln.Addr().String(), Path: "/postgres",
		RawQuery: "sslmode=disable"}
	return u.String()
}

// LoseCommitReplies makes the proxy lose the replies to the next n COMMITs
// sent through it, whichever connection sends them.
func (p *Proxy) LoseCommitReplies(n int) { p.lose.Add(int64(n)) }

// Lost returns how many COMMIT replies the proxy has lost so far.
func (p *Proxy) Lost() int { return int(p.lost.Load()) }

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
		cut := make(chan struct{})
		go func() {
			defer p.wg.Done()
			p.fromClient(client, server, cut)
		}()
		go func() {
			defer p.wg.Done()
			p.fromServer(server, client, cut)
		}()
	}
}

// fromClient forwards the client's messages to the server. When it
// forwards a COMMIT whose reply is to be lost, it closes cut and the
// client's connection.
func (p *Proxy) fromClient(client, server net.Conn, cut chan struct{}) {
	defer client.Close()
	r := bufio.NewReader(client)
	// The startup message has no type byte.
	if err := forward(r, server, false, nil); err != nil {
		server.Close()
		return
	}
	var msg []byte
	for {
		msg = msg[:0]
		if err := forward(r, nil, true, &msg); err != nil {
			server.Close()
			return
		}
		commit := msg[0] == 'Q' && strings.EqualFold(strings.TrimRight(string(msg[5:]), "\x00; \n"), "commit")
		if commit && p.lose.Add(-1) >= 0 {
			close(cut) // before the server can answer
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

// fromServer forwards the server's messages to the client until cut; then
// it reads the rest of the reply, unforwarded, up to ReadyForQuery, so the
// server finishes the commit, and closes the server's connection.
func (p *Proxy) fromServer(server, client net.Conn, cut chan struct{}) {
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
				p.lost.Add(1)
			}
			return
		default:
		}
		if err != nil {
			client.Close()
			return
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
