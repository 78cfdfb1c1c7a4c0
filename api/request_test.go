package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// apiServer serves s over real HTTP, configured as the daemon's server is,
// so that a test sees what a client sees, including what net/http answers
// before the handler.
func apiServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(s)
	srv.Config.MaxHeaderBytes = MaxHeaderBytes
	srv.Config.ReadHeaderTimeout = 5 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// rawRequest sends request as written, on a connection of its own, and
// returns the response.
func rawRequest(t *testing.T, addr, request string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestBadRequestsAnswerJSON: a request no endpoint can read is answered
// with a JSON error that says why, and the right status. Before, limit=%zz
// and limit=0;x=1 were the default limit (200), a series in the year 10000
// was a 500 with nothing logged, .. in a path was a redirect with an empty
// body, and a target over 16 KiB was net/http's 431 in text/plain.
func TestBadRequestsAnswerJSON(t *testing.T) {
	srv := apiServer(t, historyServer(&history{}, nil))
	addr := srv.Listener.Addr().String()
	long := strings.Repeat("a", MaxTarget)
	tests := []struct {
		name    string
		request string // the request line and headers
		status  int
		error   string
	}{
		{"bad escape", "GET /api/v1/pages?limit=%zz HTTP/1.1\r\n", 400,
			`query parameter "limit": bad %-escape in its value`},
		{"bad escape in a name", "GET /api/v1/pages?li%zzmit=5 HTTP/1.1\r\n", 400,
			`query parameter "li%zzmit": bad %-escape in its name`},
		{"semicolon", "GET /api/v1/pages?limit=0;x=1 HTTP/1.1\r\n", 400,
			`query parameter "limit": a semicolon is not a separator: separate parameters with an ampersand`},
		{"semicolon after a good limit", "GET /api/v1/pages?limit=5;x=1 HTTP/1.1\r\n", 400,
			`query parameter "limit": a semicolon is not a separator: separate parameters with an ampersand`},
		{"semicolon in a name", "GET /api/v1/stats?x;limit=1 HTTP/1.1\r\n", 400,
			`query parameter "x": a semicolon is not a separator: separate parameters with an ampersand`},
		{"year 10000, unix", "GET /api/v1/series?from=253402300000&to=253402300800 HTTP/1.1\r\n", 400,
			`to is out of range`},
		{"year 10000, RFC 3339", "GET /api/v1/series?from=9999-12-31T22:00:00Z&to=9999-12-31T23:59:59-01:00 HTTP/1.1\r\n", 400,
			`to is out of range`},
		{"before 1970", "GET /api/v1/series?from=1969-12-31T23:00:00Z&to=1970-01-01T00:00:00Z HTTP/1.1\r\n", 400,
			`from is out of range`},
		{"dot dot", "GET /api/v1/../stats HTTP/1.1\r\n", 404, `no such endpoint: /api/v1/../stats`},
		{"dot", "GET /api/v1/./stats HTTP/1.1\r\n", 404, `no such endpoint: /api/v1/./stats`},
		{"double slash", "GET //api/v1/stats HTTP/1.1\r\n", 404, `no such endpoint: //api/v1/stats`},
		{"long query", "GET /api/v1/stats?x=" + long + " HTTP/1.1\r\n", 414,
			`request target longer than 16384 bytes`},
		{"long query, past net/http's limit of 16 KiB", "GET /api/v1/stats?x=" + strings.Repeat(long, 3) + " HTTP/1.1\r\n", 414,
			`request target longer than 16384 bytes`},
		{"long path", "GET /" + long + " HTTP/1.1\r\n", 414, `request target longer than 16384 bytes`},
		{"large headers", "GET /api/v1/stats HTTP/1.1\r\n" + strings.Repeat("X-Padding: "+strings.Repeat("p", 1000)+"\r\n", 20), 431,
			`request header fields larger than 16384 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := rawRequest(t, addr, tt.request+"Host: localhost\r\nConnection: close\r\n\r\n")
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var got ErrorBody
			if err := json.Unmarshal(body, &got); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s %.200q: not a JSON answer", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if resp.StatusCode != tt.status || got.Error != tt.error {
				t.Errorf("got %d %.200q\nwant %d %q", resp.StatusCode, got.Error, tt.status, tt.error)
			}
		})
	}
}

// TestGoodRequestsStillAnswer: the checks turn away only what is wrong.
func TestGoodRequestsStillAnswer(t *testing.T) {
	s := historyServer(&history{}, nil)
	for _, target := range []string{
		"/api/v1/pages?limit=5", "/api/v1/pages?limit=%35", "/api/v1/pages?&limit=5&", "/api/v1/pages/count?path=/a%3Bb",
		"/api/v1/pages/count?path=/a+b", "/api/v1/series?from=0&to=253402300799&step=1d", "/api/v1/stats",
	} {
		if rec := do(s, "GET", target, nil); rec.Code != 200 {
			t.Errorf("%s: %d %s", target, rec.Code, rec.Body)
		}
	}
}

// TestNetHTTPStillAnswersInText pins what net/http answers itself, before
// any handler, in text/plain (as docs/api.md says): a Host header that is
// not a host, a request line that does not parse, and a request line and
// headers past MaxHeaderBytes. If Go ever answers these otherwise, the
// docs/api.md is to be changed with this test.
func TestNetHTTPStillAnswersInText(t *testing.T) {
	srv := apiServer(t, historyServer(&history{}, nil))
	addr := srv.Listener.Addr().String()
	for name, request := range map[string]string{
		"malformed Host":         "GET /api/v1/stats HTTP/1.1\r\nHost: a b\r\n\r\n",
		"bad escape in the path": "GET /api/v1/%zz HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"headers past MaxHeaderBytes": "GET /api/v1/stats HTTP/1.1\r\nHost: localhost\r\n" +
			strings.Repeat("X-Padding: "+strings.Repeat("p", 1000)+"\r\n", 80) + "\r\n",
	} {
		resp := rawRequest(t, addr, request)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode < 400 || !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("%s: %d %s; docs/api.md says net/http answers it in text", name, resp.StatusCode, ct)
		}
	}
}

func TestCheckQuery(t *testing.T) {
	for raw, want := range map[string]string{
		"":          "",
		"a=1&b=2":   "",
		"a=%41&b":   "",
		"&&a=1":     "",
		"a=%4":      `query parameter "a": bad %-escape in its value`,
		"a=1&b=%g0": `query parameter "b": bad %-escape in its value`,
		"%=1":       `query parameter "%": bad %-escape in its name`,
		"a;b=1":     `query parameter "a": a semicolon is not a separator: separate parameters with an ampersand`,
		"p=" + strings.Repeat("x", 10) + "&" + strings.Repeat("n", 100) + "=%": fmt.Sprintf(`query parameter "%s...": bad %%-escape in its value`, strings.Repeat("n", 64)),
	} {
		got := ""
		if err := checkQuery(raw); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("checkQuery(%q) = %q, want %q", raw, got, want)
		}
	}
}
