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
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// nginx is a real nginx serving on a loopback port, with its prefix, pid
// file and logs in a temp dir.
type nginx struct {
	bin, dir, conf, addr string
}

// startNginx starts nginx, or skips the test where it cannot be found
// (.ci/run installs it when it is missing).
func startNginx(t *testing.T) *nginx {
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
	access_log %[2]s/access.log combined;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	server {
		listen %[3]s;
		location / { return 200 "ok\n"; }
	}
}
`, userLine, dir, addr)
	if err := os.WriteFile(n.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", n.conf)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	waitFor(t, "nginx to answer", func() bool {
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
// and started once. Stored requests must be N exactly.
func TestNginxRotationAndRestart(t *testing.T) {
	ng := startNginx(t)
	log, db := filepath.Join(ng.dir, "access.log"), filepath.Join(ng.dir, "logtally.db")
	waitFor(t, "the readiness probe's line", func() bool {
		fi, err := os.Stat(log)
		return err == nil && fi.Size() > 0
	})
	const n = 3000
	const probes = 1 // the request that waited for nginx to answer
	args := []string{"run", "--db", db, "--listen", "127.0.0.1:0", "--rescan-interval", "100ms", log}
	m := start(t, time.Now, args...)
	waitFor(t, "the probe's line read", func() bool { return m.pipeline.Lines() == probes })

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
		for sent.Load() < k {
			time.Sleep(time.Millisecond)
		}
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
	first := m.pipeline.Lines()
	time.Sleep(100 * time.Millisecond) // requests logged while stopped
	m = start(t, time.Now, args...)

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("request: %v", err)
	}
	waitFor(t, "every request read", func() bool { return first+m.pipeline.Lines() >= n })
	time.Sleep(100 * time.Millisecond) // room for a line counted twice to show
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedRequests(t, db); got != n {
		t.Errorf("stored requests = %d, want %d (read %d before the restart, %d after)", got, n, first, m.pipeline.Lines())
	}
}
