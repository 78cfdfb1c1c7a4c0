package deploy

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
)

// stockNginx is a real nginx laid out as the nginx image lays out
// /etc/nginx: the image's own nginx.conf (testdata/nginx.conf), which
// defines log_format main and includes conf.d/*.conf inside http {}, and a
// conf.d holding the file under test. Its paths are moved into a temp dir
// so that it runs unprivileged on a loopback port.
type stockNginx struct {
	bin, dir, addr string
}

// findNginx returns the nginx binary, or skips the test where there is
// none (.ci/run installs Debian's).
func findNginx(t *testing.T) string {
	t.Helper()
	if bin, err := exec.LookPath("nginx"); err == nil {
		return bin
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("nginx not found: install the Debian package nginx (apt-get install -y nginx; .ci/run does) to run this test")
	return ""
}

// newStockNginx lays out the image's configuration with conf as
// conf.d/default.conf, as the Kubernetes example mounts its ConfigMap.
// conf is used as given: the caller moves its paths.
func newStockNginx(t *testing.T, conf string) *stockNginx {
	t.Helper()
	n := &stockNginx{bin: findNginx(t), dir: t.TempDir(), addr: freeAddr(t)}
	for _, d := range []string{"conf.d", "logs", "html"} {
		if err := os.Mkdir(filepath.Join(n.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stock, err := os.ReadFile("testdata/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	main := string(stock)
	// As root the workers would switch to the image's user nginx, which
	// Debian lacks: stay who we are. Unprivileged, the line would only
	// draw a warning.
	userLine := ""
	if os.Geteuid() == 0 {
		if u, err := user.Current(); err == nil {
			userLine = "user " + u.Username + ";"
		}
	}
	main = mustReplace(t, main, "user  nginx;", userLine)
	main = mustReplace(t, main, "/var/log/nginx/", n.dir+"/logs/")
	main = mustReplace(t, main, "/run/nginx.pid", n.dir+"/nginx.pid")
	main = mustReplace(t, main, "/etc/nginx/", n.dir+"/")
	// Debian's nginx is built with its temp paths in /var/lib/nginx.
	main = mustReplace(t, main, "http {\n", "http {\n"+strings.ReplaceAll(`
    client_body_temp_path DIR/body;
    proxy_temp_path DIR/proxy;
    fastcgi_temp_path DIR/fastcgi;
    uwsgi_temp_path DIR/uwsgi;
    scgi_temp_path DIR/scgi;
`, "DIR", n.dir))
	mime, err := os.ReadFile("/etc/nginx/mime.types")
	if err != nil {
		mime = []byte("types { text/html html; }\n")
	}
	for name, text := range map[string]string{
		"nginx.conf":          main,
		"mime.types":          string(mime),
		"conf.d/default.conf": conf,
		"html/index.html":     "<p>home</p>\n",
	} {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// args are the command-line arguments that point nginx at the layout.
func (n *stockNginx) args(more ...string) []string {
	return append([]string{"-e", filepath.Join(n.dir, "logs", "error.log"), "-p", n.dir + "/", "-c", filepath.Join(n.dir, "nginx.conf")}, more...)
}

// test runs nginx -t: whether nginx loads the configuration, and what it
// said.
func (n *stockNginx) test() (string, error) {
	out, err := exec.Command(n.bin, n.args("-t")...).CombinedOutput()
	return string(out), err
}

// start runs nginx until the test ends and waits until it answers.
func (n *stockNginx) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(n.bin, n.args("-g", "daemon off;")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT) // graceful: the workers finish their requests
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	poll.Until(t, "nginx to answer", func() bool {
		select {
		case <-exited:
			t.Fatalf("nginx exited: see %s", filepath.Join(n.dir, "logs", "error.log"))
		default:
		}
		resp, err := http.Get("http://" + n.addr + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
}

// freeAddr returns a loopback address that was free a moment ago. Tests
// that start nginx are not parallel, so that no other takes it meanwhile.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// mustReplace replaces every old in s, failing the test if there is none:
// a configuration that no longer holds what a test moves must not be
// tested as it stands.
func mustReplace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not found in:\n%s", old, s)
	}
	return strings.ReplaceAll(s, old, new)
}
