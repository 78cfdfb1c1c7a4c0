package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/logtally/logtally/internal/pgtest"
)

// childEnv, when set, makes the test binary run logtally with the
// arguments it holds instead of the tests: the tests' child processes.
// Arguments are separated by spaces; \x1f is a space within one.
const childEnv = "LOGTALLY_TEST_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		fields := strings.Fields(args)
		for i, f := range fields {
			fields[i] = strings.ReplaceAll(f, "\x1f", " ")
		}
		os.Exit(runMain(fields, nil))
	}
	childrenExitAtOnce()
	// The scripts in testdata/script run the program as "logtally". The
	// fleet tests' databases are on one PostgreSQL server (pgtest.Database),
	// stopped after the last test.
	testscript.Main(pgtest.Managed(m), map[string]func(){"logtally": func() { os.Exit(runMain(os.Args[1:], scriptSetup)) }})
}

// childrenExitAtOnce keeps the race detector from holding each child
// process a second at its exit. Built with -race, a program sleeps a
// second before it exits (GORACE's atexit_sleep_ms, 1000 by default) in
// case a goroutine still running races: with the few dozen children the
// tests start, and every logtally a script runs, that was most of the
// suite's time, spent asleep. A race a child hits is still reported when
// it happens, and still makes it exit with status 66. The setting is the
// environment's, made before any test runs, so that every child inherits
// it (testscript passes GORACE on too); one the user set is kept.
func childrenExitAtOnce() {
	v := os.Getenv("GORACE")
	if strings.Contains(v, "atexit_sleep_ms") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(v+" atexit_sleep_ms=0"))
}

// child runs the program with args in a child process, and returns its
// exit status and what it wrote to standard error.
func child(t *testing.T, timeout time.Duration, args ...string) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(args, " "))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String(), took
}

// daemon is `logtally run` in a child process, for the tests that kill it
// or stop it with a signal and start it again.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string        // where its API listens, as its "serving" line says
	exited chan struct{} // closed once it has exited and its log is read
	err    error         // how it exited, once exited is closed

	mu  sync.Mutex
	log bytes.Buffer // what it wrote to standard error
}

var servingAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

// startDaemon starts `logtally run` with args (as childEnv holds them) and
// --admin-listen 127.0.0.1:0, and returns once it serves its API, at the
// address its log names: each life has an address of its own, which no
// other test can take between a probe and the daemon's listen. A daemon
// still running at the end of the test is killed.
func startDaemon(t *testing.T, args string) *daemon {
	t.Helper()
	return startDaemonAs(t, os.Args[0], nil, args)
}

// startDaemonAs is startDaemon, with bin, a copy of the test binary, run
// as cred's user (see unprivileged).
func startDaemonAs(t *testing.T, bin string, cred *syscall.Credential, args string) *daemon {
	t.Helper()
	d := &daemon{t: t, exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "-test.run=^$")
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	d.cmd.Env = append(os.Environ(), childEnv+"=run --admin-listen 127.0.0.1:0 "+args)
	pipe, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.stop(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("logtally run %s logged:\n%s", args, d.logTail())
		}
	})
	addr := make(chan string, 1)
	go d.read(pipe, addr)
	select {
	case d.addr = <-addr:
		return d
	case <-d.exited:
		t.Fatalf("logtally run %s exited at start: %v\n%s", args, d.err, d.logTail())
	case <-time.After(time.Minute):
		t.Fatalf("logtally run %s did not serve within a minute:\n%s", args, d.logTail())
	}
	return nil
}

// read keeps the daemon's log until it exits, sends the address of its
// first "serving" line to addr, then waits for the process.
func (d *daemon) read(pipe io.Reader, addr chan<- string) {
	defer close(d.exited)
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		d.mu.Lock()
		d.log.Write(sc.Bytes())
		d.log.WriteByte('\n')
		d.mu.Unlock()
		if m := servingAddr.FindSubmatch(sc.Bytes()); m != nil {
			select {
			case addr <- string(m[1]):
			default:
			}
		}
	}
	io.Copy(io.Discard, pipe)
	d.err = d.cmd.Wait()
}

// stop sends sig to the daemon, unless it has exited already, and returns
// how it exited. It fails the test if the daemon is still running 30 s
// later.
func (d *daemon) stop(sig syscall.Signal) error { return d.stopWithin(sig, 30*time.Second) }

// stopWithin is stop, failing the test if the daemon is still running
// after patience.
func (d *daemon) stopWithin(sig syscall.Signal, patience time.Duration) error {
	select {
	case <-d.exited:
		return d.err
	default:
	}
	if stopProcess(d.cmd.Process, sig, d.exited, patience) {
		d.t.Errorf("logtally run still running %s after %v", patience, sig)
	}
	return d.err
}

// stopProcess sends sig to p and waits until exited is closed (by whoever
// waits for p). If p is still running after patience, it is killed and
// stopProcess reports that it had to.
func stopProcess(p *os.Process, sig os.Signal, exited <-chan struct{}, patience time.Duration) (killed bool) {
	p.Signal(sig)
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case <-exited:
		return false
	case <-timer.C:
		p.Kill()
		<-exited
		return true
	}
}

// logTail returns the end of what the daemon logged.
func (d *daemon) logTail() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.log.Bytes()
	return string(b[max(0, len(b)-3000):])
}

// base returns the URL of the daemon's API.
func (d *daemon) base() string { return "http://" + d.addr }
