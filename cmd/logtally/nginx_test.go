package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
)

// nginx is a real nginx serving on a loopback port, with its prefix, pid
// file and logs in a temp dir.
type nginx struct {
	bin, dir, conf, addr string
}

// startNginx starts nginx with one server that logs in the combined
// format, or skips the test where nginx cannot be found (.ci/run installs
// it when it is missing).
func startNginx(t *testing.T) *nginx {
	t.Helper()
	return startNginxWith(t, `access_log %[1]s/access.log combined;
	server {
		listen %[2]s;
		location / { return 200 "ok\n"; }
	}`)
}

// startNginxWith starts nginx with servers, the part of the http block
// that logs and serves: %[1]s in it is the temp dir, %[2]s the loopback
// address to listen on.
func startNginxWith(t *testing.T, servers string) *nginx {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		t.Skip("nginx not found: install the Debian package nginx (apt-get install -y nginx; .ci/run does) to run this test")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	n := &nginx{bin: bin, dir: dir, conf: filepath.Join(dir, "nginx.conf"), addr: addr}
	userLine := ""
	if os.Geteuid() == 0 {
		// As root the workers would switch to nobody; stay who we are.
		if u, err := user.Current(); err == nil {
			userLine = "user " + u.Username + ";"
		}
	}
	conf := fmt.Sprintf(`%s
daemon off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 256; }
http {
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	%[3]s
}
`, userLine, dir, fmt.Sprintf(servers, dir, addr))
	if err := os.WriteFile(n.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", n.conf)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	t.Cleanup(func() {
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stopProcess(cmd.Process, syscall.SIGQUIT, exited, 10*time.Second)
	})
	poll.Until(t, "nginx to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return n
}

// reopen is what logrotate's postrotate does: nginx -s reopen.
func (n *nginx) reopen(t *testing.T) {
	t.Helper()
	out, err := exec.Command(n.bin, "-e", filepath.Join(n.dir, "error.log"), "-p", n.dir, "-c", n.conf, "-s", "reopen").CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -s reopen: %v: %s", err, out)
	}
}

// TestNginxRotationAndRestart: a real nginx serves N requests; during the
// load its log is rotated by rename and reopened, and logtally is stopped
// and started once. Stored requests must be N exactly. Not parallel, as
// no test that starts nginx is: nginx listens on a port found free a
// moment before (startNginxWith), which a test running meanwhile could
// take.
func TestNginxRotationAndRestart(t *testing.T) {
	ng := startNginx(t)
	log, db := filepath.Join(ng.dir, "access.log"), filepath.Join(ng.dir, "logtally.db")
	poll.Until(t, "the readiness probe's line", func() bool {
		fi, err := os.Stat(log)
		return err == nil && fi.Size() > 0
	})
	const n = 3000
	const probes = 1 // the request that waited for nginx to answer
	args := []string{"run", "--db", db, "--admin-listen", "127.0.0.1:0", "--rescan-interval", "100ms", log}
	m := start(t, time.Now, args...)
	poll.Until(t, "the probe's line read", func() bool { return m.pipeline().Lines() == probes })

	var sent atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for sent.Add(1) <= n-probes {
				resp, err := client.Get("http://" + ng.addr + "/page")
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	at := func(k int64) {
		poll.Until(t, fmt.Sprintf("%d requests sent", k), func() bool { return sent.Load() >= k })
	}

	at(n / 3)
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // nginx goes on writing to access.log.1
	ng.reopen(t)

	at(2 * n / 3)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	first := m.pipeline().Lines()
	time.Sleep(100 * time.Millisecond) // requests logged while stopped
	m = start(t, time.Now, args...)

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("request: %v", err)
	}
	poll.Until(t, "every request read", func() bool { return first+m.pipeline().Lines() >= n })
	time.Sleep(100 * time.Millisecond) // room for a line counted twice to show
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedRequests(t, db); got != n {
		t.Errorf("stored requests = %d, want %d (read %d before the restart, %d after)", got, n, first, m.pipeline().Lines())
	}
}

// TestNginxSites: a real nginx with two server blocks, two server_names on
// one loopback port, logging $host; the requests to each name are counted
// under that site, and the all-sites view holds both. Not parallel: see
// TestNginxRotationAndRestart.
func TestNginxSites(t *testing.T) {
	const format = `$host $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`
	n := startNginxWith(t, `log_format sites '`+format+`';
	access_log %[1]s/access.log sites;
	server {
		listen %[2]s;
		server_name blog.test;
		location / { return 200 "blog\n"; }
	}
	server {
		listen %[2]s;
		server_name shop.test;
		location / { return 200 "shop\n"; }
	}`)
	want := map[string]int{"blog.test": 7, "shop.test": 4}
	for host, count := range want {
		for i := range count {
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/page%d", n.addr, i), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = strings.ToUpper(host) // nginx logs $host in lower case
			req.Header.Set("User-Agent", browser)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := strings.TrimSpace(string(body)); got != strings.TrimSuffix(host, ".test") {
				t.Fatalf("nginx answered %q for host %s: the server blocks are not told apart", got, host)
			}
		}
	}
	m := start(t, time.Now, "run", "--db", filepath.Join(t.TempDir(), "db"), "--admin-listen", "127.0.0.1:0",
		"--format", format, "--site-field", "$host", filepath.Join(n.dir, "access.log"))
	// 11, and startNginxWith's first request, to 127.0.0.1.
	poll.Until(t, "both sites counted", func() bool { return stats(t, m).Requests == 12 })
	for host, count := range want {
		var got siteStats
		if code := getURL(t, "http://"+m.Addr()+"/api/v1/stats?site="+host, &got); code != http.StatusOK {
			t.Fatalf("site %s: %d", host, code)
		}
		if got.Requests != int64(count) || got.Pageviews != int64(count) || got.Visitors != 1 {
			t.Errorf("site %s: %+v, want %d requests and page views from 1 visitor", host, got, count)
		}
	}
	if st := stats(t, m); st.Visitors != 1 {
		t.Errorf("all sites: %d visitors, want 1 (one client on two sites)", st.Visitors)
	}
}

// TestNginxPublishesThePublicListener: the nginx snippets of the README
// and docs/operations.md, in a real nginx, in front of the daemon's public
// listener, publish the live counter, and nothing of the admin listener:
// the status is a 404 through them. Not parallel (see
// TestNginxRotationAndRestart).
func TestNginxPublishesThePublicListener(t *testing.T) {
	m := start(t, time.Now, "run", "--db", filepath.Join(t.TempDir(), "db"), "--admin-listen", "127.0.0.1:0",
		"--public-listen", "127.0.0.1:0")
	for _, doc := range []string{"../../README.md", "../../docs/operations.md"} {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			data, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, block, ok := strings.Cut(string(data), "```nginx\n")
			block, _, _ = strings.Cut(block, "```")
			if !ok || !strings.Contains(block, "127.0.0.1:8081") || strings.Contains(block, "8080") {
				t.Fatalf("%s: no nginx snippet that proxies the public listener, 127.0.0.1:8081:\n%s", doc, block)
			}
			block = strings.ReplaceAll(block, "127.0.0.1:8081", m.PublicAddr())
			ng := startNginxWith(t, "server {\n\tlisten %[2]s;\n"+block+"\tlocation / { return 200 \"ok\\n\"; }\n}")
			for path, want := range map[string]string{"/api/v1/stats": `"window_seconds":600`, "/api/v1/status": "", "/metrics": ""} {
				resp, err := http.Get("http://" + ng.addr + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want != "" && (resp.StatusCode != 200 || !strings.Contains(string(body), want)) ||
					want == "" && (resp.StatusCode == 200 && string(body) != "ok\n" || strings.Contains(string(body), "logtally_")) {
					t.Errorf("GET %s through nginx: %d %.200s", path, resp.StatusCode, body)
				}
			}
		})
	}
}
