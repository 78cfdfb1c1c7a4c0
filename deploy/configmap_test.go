package deploy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/parser"
)

// nginxConf returns the ConfigMap's file that the example's nginx
// container loads from conf.d, where the image's nginx.conf includes it.
func (ex example) nginxConf(t *testing.T) string {
	t.Helper()
	text, ok := ex.configFile(ex.nginx, "/etc/nginx/conf.d/default.conf")
	if !ok {
		t.Fatalf("the nginx container has no conf.d/default.conf from the ConfigMap %s", ex.configMap.Metadata.Name)
	}
	return text
}

// TestKubernetesNginxLoads: the example's nginx configuration loads in the
// nginx image, included by the image's own nginx.conf, and a configuration
// that redefines the image's log_format main, as the example once did,
// does not: nginx -t of Debian's nginx tells them apart.
func TestKubernetesNginxLoads(t *testing.T) {
	tests := []struct {
		name, conf string
		want       string // in nginx -t's output
		ok         bool
	}{
		{"the example", loadExample(t).nginxConf(t), "test is successful", true},
		{"a log_format main of its own", `log_format main '$remote_addr - $remote_user [$time_local] "$request" $status';
server { listen 80; }
`, `duplicate "log_format" name "main"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newStockNginx(t, tt.conf)
			out, err := n.test()
			if (err == nil) != tt.ok || !strings.Contains(out, tt.want) {
				t.Errorf("nginx -t: %v, want %q:\n%s", err, tt.want, out)
			}
		})
	}
}

// TestKubernetesNginxLogsWhatLogtallyReads: the example's nginx, started
// in the image's layout, writes lines that logtally parses with the format
// its container is given, field by field; it proxies the counter's poll
// to logtally (a stand-in here, for the binary's listener flags are not
// what this tests) and does not log it.
func TestKubernetesNginxLogsWhatLogtallyReads(t *testing.T) {
	ex := loadExample(t)
	format := ex.format(t)
	polled := make(chan string, 10)
	logtally := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		polled <- r.URL.Path
		io.WriteString(w, `{"visitors":1}`)
	}))
	t.Cleanup(logtally.Close)

	conf := ex.nginxConf(t)
	n := newStockNginx(t, "")
	conf = mustReplace(t, conf, "listen 80;", "listen "+n.addr+";")
	conf = mustReplace(t, conf, "/var/log/nginx/", n.dir+"/logs/")
	conf = mustReplace(t, conf, "/usr/share/nginx/html", n.dir+"/html")
	conf = mustReplace(t, conf, "http://127.0.0.1:8080", logtally.URL)
	if err := os.WriteFile(filepath.Join(n.dir, "conf.d", "default.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	n.start(t) // its first request, GET /, is logged too

	const agent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	get := func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+n.addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", agent)
		req.Header.Set("Referer", "https://example.org/from")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/api/v1/stats"); code != http.StatusOK || body != `{"visitors":1}` || <-polled != "/api/v1/stats" {
		t.Errorf("GET /api/v1/stats through nginx: %d %q, want logtally's answer", code, body)
	}
	get("/missing?q=1")

	log := filepath.Join(n.dir, "logs", "access.log")
	var lines [][]byte
	poll.Until(t, "nginx to log the requests", func() bool {
		b, err := os.ReadFile(log)
		lines = bytes.SplitAfter(b, []byte("\n"))
		return err == nil && len(lines) > 2 // two lines and what follows the last newline
	})
	if last := lines[len(lines)-1]; len(last) != 0 {
		t.Fatalf("a partial line ends the log: %q", last)
	}
	lines = lines[:len(lines)-1]
	if len(lines) != 2 {
		t.Fatalf("nginx logged %d lines, want 2 (the poll of the counter is not logged):\n%s", len(lines), bytes.Join(lines, nil))
	}
	// nginx logs a request when it is done with it, which for the start's
	// request on a kept-alive connection may come after the next one's.
	if bytes.Contains(lines[0], []byte("/missing")) {
		lines[0], lines[1] = lines[1], lines[0]
	}
	for i, want := range []struct {
		path, query string
		status      int
	}{{"/", "", http.StatusOK}, {"/missing", "q=1", http.StatusNotFound}} {
		line := bytes.TrimSuffix(lines[i], []byte("\n"))
		var r parser.Record
		if err := format.Parse(line, &r); err != nil {
			t.Fatalf("logtally's format %q rejects nginx's line %q: %v", format, line, err)
		}
		if age := time.Since(r.Time); age < -time.Minute || age > time.Minute {
			t.Errorf("line %d: time %s, want about now", i+1, r.Time)
		}
		for _, f := range []struct{ field, got, want string }{
			{"host", string(r.Host), "127.0.0.1"},
			{"method", string(r.Method), "GET"},
			{"path", string(r.Path), want.path},
			{"query", string(r.Query), want.query},
			{"status", strconv.Itoa(r.Status), strconv.Itoa(want.status)},
		} {
			if f.got != f.want {
				t.Errorf("line %d: %s = %q, want %q (%q)", i+1, f.field, f.got, f.want, line)
			}
		}
		if i == 1 && (string(r.Referer) != "https://example.org/from" || string(r.UserAgent) != agent) {
			t.Errorf("line 2: referer %q, user agent %q, want what the request sent (%q)", r.Referer, r.UserAgent, line)
		}
	}
}
