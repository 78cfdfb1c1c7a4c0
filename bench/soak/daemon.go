package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// daemon is one `logtally run` child.
type daemon struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed once the child has exited
	err     error         // its exit, once done is closed
	stopped bool          // the soak ended it (a kill or a stop)

	mu  sync.Mutex
	hwm int64 // most VmHWM seen, in kB
}

// startDaemon starts bin with args, its output appended to logf.
func startDaemon(bin string, args []string, logf io.Writer) (*daemon, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	go d.watchRSS()
	return d, nil
}

// watchRSS samples the child's peak resident set size while it lives.
func (d *daemon) watchRSS() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		d.sampleRSS()
		select {
		case <-d.done:
			return
		case <-t.C:
		}
	}
}

func (d *daemon) sampleRSS() {
	kb, err := vmHWM(d.cmd.Process.Pid)
	if err != nil {
		return // exited meanwhile
	}
	d.mu.Lock()
	d.hwm = max(d.hwm, kb)
	d.mu.Unlock()
}

// peakRSS returns the most VmHWM seen, in kB.
func (d *daemon) peakRSS() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hwm
}

func vmHWM(pid int) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM")
}

// exited reports whether the child has exited.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// kill ends the child with SIGKILL, and reports false if it had already
// exited by itself.
func (d *daemon) kill() bool {
	d.sampleRSS()
	if d.exited() {
		return false
	}
	d.stopped = true
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	return true
}

// stop ends the child with SIGTERM, as systemd would, and returns its exit.
func (d *daemon) stop(timeout time.Duration) error {
	d.sampleRSS()
	if d.exited() {
		return fmt.Errorf("it had exited by itself: %v", d.err)
	}
	d.stopped = true
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return d.err
	case <-time.After(timeout):
		d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		return fmt.Errorf("still running %s after SIGTERM: killed", timeout)
	}
}

// api talks to the daemon's JSON API.
type api struct {
	base   string
	client *http.Client
	// scope, if set, is the ?scope= of the stats and series asked for: in
	// fleet mode the node's own are "node".
	scope string
}

func (a *api) scoped(path string) string {
	if a.scope == "" {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "scope=" + a.scope
}

func newAPI(addr string) *api {
	return &api{base: "http://" + addr, client: &http.Client{Timeout: 5 * time.Second}}
}

// get decodes the JSON answer to path into v, and returns the status.
func (a *api) get(ctx context.Context, path string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			return resp.StatusCode, fmt.Errorf("GET %s: %w: %.200s", path, err, body)
		}
	}
	return resp.StatusCode, nil
}

// ready returns the status of /readyz, 0 when the daemon does not answer.
func (a *api) ready(ctx context.Context) int {
	code, err := a.get(ctx, "/readyz", nil)
	if err != nil {
		return 0
	}
	return code
}

// waitFor polls cond every 100 ms until it holds, d exits, or the timeout.
func waitFor(ctx context.Context, d *daemon, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || d.exited() || ctx.Err() != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type stats struct {
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Requests  int64     `json:"requests"`
	PageViews int64     `json:"pageviews"`
	Visitors  int64     `json:"visitors"`
	AsOf      time.Time `json:"as_of"` // of the fleet's
}

type point struct {
	T         time.Time `json:"t"`
	Requests  *int64    `json:"requests"`
	PageViews *int64    `json:"pageviews"`
	Visitors  *int64    `json:"visitors"`
	Bytes     *int64    `json:"bytes"`
}

type series struct {
	Approximate bool    `json:"approximate_visitors"`
	Points      []point `json:"points"`
}

func (a *api) series(ctx context.Context, from, to time.Time) (series, error) {
	return a.seriesScoped(ctx, from, to, a.scope)
}

// seriesScoped is series with ?scope=scope, none when empty.
func (a *api) seriesScoped(ctx context.Context, from, to time.Time, scope string) (series, error) {
	var s series
	path := "/api/v1/series?step=1m&from=" + from.UTC().Format(time.RFC3339) + "&to=" + to.UTC().Format(time.RFC3339)
	if scope != "" {
		path += "&scope=" + scope
	}
	code, err := a.get(ctx, path, &s)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: status %d", path, code)
	}
	return s, err
}

// freePort returns a loopback port that nothing listens on now; every
// daemon of the run listens on it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// disk is the database's own small file system, a tmpfs, which the soak
// fills and then grows.
type disk struct {
	dir    string
	size   int64 // bytes
	filler string
}

// mountDisk mounts a tmpfs of size bytes on dir; it needs root.
func mountDisk(dir string, size int64) (*disk, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("not running as root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "logtally-soak", dir).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("mount -t tmpfs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return &disk{dir: dir, size: size, filler: filepath.Join(dir, "filler")}, nil
}

// fill writes a file until the tmpfs has no space left.
func (d *disk) fill() error {
	f, err := os.OpenFile(d.filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for n := len(block); n >= 512; n /= 2 {
		for {
			if _, err := f.Write(block[:n]); err != nil {
				if errors.Is(err, syscall.ENOSPC) {
					break
				}
				return err
			}
		}
	}
	return nil
}

// grow remounts the tmpfs by more bytes, then removes the filler.
func (d *disk) grow(more int64) error {
	size := d.size + more
	out, err := exec.Command("mount", "-o", "remount,size="+strconv.FormatInt(size, 10), d.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount -o remount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	d.size = size
	return os.Remove(d.filler)
}

// free removes the filler without growing (for a run that ends while full).
func (d *disk) free() error {
	err := os.Remove(d.filler)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (d *disk) unmount() error {
	out, err := exec.Command("umount", d.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("umount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
