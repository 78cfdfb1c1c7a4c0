package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDaemonAnswersBadRequestsInJSON: the daemon's own server lets a long
// request reach the API, which answers it in JSON. Before, a query of
// more than 16 KiB got net/http's 431 in text/plain, and a path with ..
// a redirect with an empty body.
func TestDaemonAnswersBadRequestsInJSON(t *testing.T) {
	t.Parallel()
	m := start(t, time.Now, "run", "--db", filepath.Join(t.TempDir(), "db"), "--admin-listen", "127.0.0.1:0")
	for _, tt := range []struct {
		target string
		status int
	}{
		{"/api/v1/stats?x=" + strings.Repeat("a", 30<<10), 414},
		{"/api/v1/../stats", 404},
		{"/api/v1/pages?limit=%zz", 400},
		{"/api/v1/pages?limit=0;x=1", 400},
	} {
		conn, err := net.Dial("tcp", m.Addr())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, "GET "+tt.target+" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(string(body), `{"error":`) {
			t.Errorf("GET %.60s: %d %s %.100q, want %d and a JSON error", tt.target, resp.StatusCode,
				resp.Header.Get("Content-Type"), body, tt.status)
		}
	}
}
