// Package pgtest starts a real, throwaway PostgreSQL server for a test: a
// fresh cluster made by initdb in t.TempDir(), listening on a free loopback
// port and on a unix socket in the same directory, trusting every local
// connection. The test gets a connection URL and ways to hurt the server
// the way production does: stop it as a crash would (-m immediate), start
// it again on the same data and port, cut every connection.
//
// The one idea: postgres runs as a child of the test binary, not as a
// daemon started by pg_ctl, so the test owns its whole life. It is stopped
// in t.Cleanup, and if the test binary itself is killed the kernel sends
// postgres SIGQUIT (its immediate shutdown), so nothing outlives the test.
//
// A cluster costs about a second to make and start. Tests that only read
// and write share one server per test binary instead (shared.go): Database
// gives each a database of its own on it, and Main, run from TestMain
// (or Managed, where another runner runs the tests), stops it after the
// last test. A test that stops, restarts or cuts the server starts its own.
//
// PostgreSQL refuses to run as root. When the test runs as root, initdb and
// postgres run as the "postgres" system user if there is one, else as
// "nobody", with the test's directory handed over to that user.
//
// Where the server binaries are missing the test is skipped with a message.
// They are looked up in PATH, then in /usr/lib/postgresql/*/bin (Debian's
// postgresql package), newest version first.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Settings every test server starts with: small, and without fsync, since
// a test cluster is thrown away and the operating system keeps what
// postgres wrote across a crash of postgres itself, which is the crash the
// tests make. A test that measures real commits passes "fsync=on".
var defaultSettings = []string{
	"fsync=off",
	"full_page_writes=off",
	"shared_buffers=32MB",
	"max_connections=60",
	"TimeZone=UTC",
	"log_min_messages=warning",
}

// startTimeout bounds how long initdb or a start may take before the test
// fails: the machine may be shared and slow, but not this slow.
const startTimeout = 60 * time.Second

// T is what a Server needs of whoever owns it: a test's testing.TB, or a
// program's stand-in (bench/soak runs one outside any test).
type T interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Failed() bool
}

var _ T = testing.TB(nil)

// Server is a running (or stopped) test PostgreSQL server.
type Server struct {
	tb       T
	bin      string // directory of initdb and postgres
	dir      string // holds data/ and log
	sockDir  string
	data     string
	logPath  string
	port     int
	settings []string
	cred     *syscall.Credential // who postgres runs as; nil: the test's own user

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// Start creates a cluster in a temporary directory of tb, starts it and
// returns it; it is stopped when the test ends. settings are extra server
// settings as "name=value", applied after the defaults. Start skips the
// test if PostgreSQL is not installed.
func Start(tb T, settings ...string) *Server {
	tb.Helper()
	bin, err := findBin()
	if err != nil {
		tb.Skipf("pgtest: PostgreSQL server binaries not found, skipping (install the postgresql package): %v", err)
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), settings: append(slices.Clone(defaultSettings), settings...)}
	s.data = filepath.Join(s.dir, "data")
	s.logPath = filepath.Join(s.dir, "postgres.log")
	s.sockDir = s.dir
	// A unix socket path must fit in 107 bytes.
	if len(s.sockDir)+len("/.s.PGSQL.65535") > 100 {
		d, err := os.MkdirTemp("", "pgs")
		if err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
		tb.Cleanup(func() { os.RemoveAll(d) })
		s.sockDir = d
	}
	if os.Geteuid() == 0 {
		if err := s.dropRoot(); err != nil {
			tb.Fatalf("pgtest: running as root: %v", err)
		}
	}
	if out, err := s.run(filepath.Join(bin, "initdb"), "-D", s.data, "-A", "trust", "-U", "postgres",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		tb.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	for attempt := 0; ; attempt++ {
		s.port, err = freePort()
		if err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
		if err = s.start(); err == nil {
			break
		}
		// Another process may have taken the port between our probe and
		// postgres binding it; a few tries with fresh ports settle that.
		if attempt == 3 {
			tb.Fatalf("pgtest: start: %v\n%s", err, s.logTail())
		}
	}
	tb.Cleanup(s.cleanup)
	return s
}

// Available reports why Start would skip: nil when the PostgreSQL server
// binaries are installed. A test that only sometimes needs a server asks
// first.
func Available() error {
	_, err := findBin()
	return err
}

// findBin returns the directory that holds initdb and postgres.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // /usr/local/bin/initdb may link to the real installation
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return -cmpFloat(version(a), version(b)) })
	for _, d := range dirs {
		_, e1 := os.Stat(filepath.Join(d, "initdb"))
		_, e2 := os.Stat(filepath.Join(d, "postgres"))
		if e1 == nil && e2 == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres in PATH or /usr/lib/postgresql/*/bin")
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dropRoot picks the user postgres runs as and gives it the directories.
func (s *Server) dropRoot() error {
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("no postgres or nobody user to run PostgreSQL as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return err
	}
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	for _, d := range []string{s.dir, s.sockDir} {
		if err := os.Chown(d, int(uid), int(gid)); err != nil {
			return err
		}
	}
	// t.TempDir's directories live in one per test, root's and 0700: the
	// user must be able to pass through it to reach its own.
	return os.Chmod(filepath.Dir(s.dir), 0o711)
}

// command returns cmd to run as the server's user, in its directory.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// run runs a command to completion and returns its output.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := s.command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.Bytes(), err
	case <-time.After(startTimeout):
		cmd.Process.Kill()
		<-done
		return out.Bytes(), fmt.Errorf("%s: timed out after %s", filepath.Base(name), startTimeout)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start starts postgres on s.data and s.port and waits until it accepts
// connections.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	args := []string{"-D", s.data, "-p", strconv.Itoa(s.port), "-k", s.sockDir, "-c", "listen_addresses=127.0.0.1"}
	for _, kv := range s.settings {
		args = append(args, "-c", kv)
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := s.command(filepath.Join(s.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// If the test binary dies, postgres gets what pg_ctl stop -m immediate
	// would send it. The kernel sends it when the thread that started
	// postgres ends (go.dev/issue/27505), so that thread is held by the
	// goroutine that waits for postgres, until postgres is gone.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := cmd.Start()
		started <- err
		if err == nil {
			cmd.Wait()
		}
		logf.Close()
		close(exited)
	}()
	if err := <-started; err != nil {
		return err
	}
	s.cmd, s.exited = cmd, exited
	if err := s.waitReady(exited); err != nil {
		cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
		s.cmd = nil
		return err
	}
	return nil
}

// waitReady waits until the postmaster says it is ready in its pid file,
// which is what pg_ctl -w waits for, or until it exits.
func (s *Server) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	pidFile := filepath.Join(s.data, "postmaster.pid")
	for {
		if b, err := os.ReadFile(pidFile); err == nil {
			// The eighth line is the postmaster's status (PostgreSQL 10+).
			if lines := strings.Split(string(b), "\n"); len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready" {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("postgres exited while starting")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", startTimeout)
		}
	}
}

// stop sends sig to the postmaster and waits for it to exit.
func (s *Server) stop(sig syscall.Signal) {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.tb.Errorf("pgtest: signal postgres: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(startTimeout):
		s.cmd.Process.Kill()
		<-s.exited
		s.tb.Errorf("pgtest: postgres did not stop on %v within %s; killed", sig, startTimeout)
	}
	s.cmd = nil
}

func (s *Server) cleanup() {
	s.stop(syscall.SIGQUIT)
	if s.tb.Failed() {
		s.tb.Logf("pgtest: end of the server log:\n%s", s.logTail())
	}
}

// logTail returns the end of the server's log, for failure messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// URL returns the URL of the server's postgres database as the postgres
// superuser, over TCP on the loopback.
func (s *Server) URL() string { return s.DatabaseURL("postgres") }

// DatabaseURL returns the URL of database name on the server.
func (s *Server) DatabaseURL(name string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path: "/" + name, RawQuery: "sslmode=disable"}
	return u.String()
}

// Port returns the server's TCP port; it stays the same across Restart.
func (s *Server) Port() int { return s.port }

// SocketDir returns the directory of the server's unix socket.
func (s *Server) SocketDir() string { return s.sockDir }

// Stop shuts the server down cleanly (pg_ctl stop -m fast: SIGINT) and
// waits for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.tb.Helper()
	s.stop(syscall.SIGINT)
}

// StopImmediate stops the server the way a crash would: it is what
// pg_ctl stop -m immediate does (SIGQUIT to the postmaster), so the
// backends quit without a checkpoint and the next start recovers from the
// write-ahead log. It waits for the postmaster to exit.
func (s *Server) StopImmediate() {
	s.tb.Helper()
	s.stop(syscall.SIGQUIT)
}

// Restart starts a stopped server again on the same data directory and
// port; it fails the test if it cannot. A running server is stopped first,
// cleanly.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		// The old postmaster's port may linger for a moment.
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.tb.Fatalf("pgtest: restart: %v\n%s", err, s.logTail())
}

// Running reports whether the server's postmaster is running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// TerminateOthers runs pg_terminate_backend on every client connection to
// the server but its own, as an operator or a failover would, and returns
// how many it ended.
func (s *Server) TerminateOthers(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return 0, fmt.Errorf("terminate backends: %w", err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("terminate backends: %w", err)
	}
	return n, nil
}

// CreateDatabase creates a database on the server and returns its URL, so
// that tests can share one server without sharing tables.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DatabaseURL(name), nil
}
