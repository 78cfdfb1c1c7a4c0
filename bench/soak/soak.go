package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

type config struct {
	duration, rotate, maxUp, maxDown time.Duration
	window                           time.Duration
	rate                             int
	seed                             uint64
	keep                             bool
	bin, windowEnd                   string
	fleet                            bool // ship to a fleet database, and stop and restart it
}

// faults counts what the soak did to the daemon and its files, by kind.
type faults struct {
	lifeFaults
	fileFaults
	diskFaults
	fleetFaults
	identityFaults
}

// lifeFaults counts the daemons' lives.
type lifeFaults struct {
	kills, restarts, unexpectedExits int
}

// fileFaults counts what was done to the log's files, and the replays of
// them between two runs.
type fileFaults struct {
	renames, copytruncates, rotationsDown int
	doubleRotationDowntimes               int
	gzipDowntimes, gzipFiles              int
	replays, replayLines                  int64
}

// diskFaults counts the database's disk filling up under a daemon.
type diskFaults struct {
	diskFull, diskFullFailed, killedInFull int
}

// fleetFaults counts the fleet database's outages (-fleet).
type fleetFaults struct {
	pgRestarts, pgRetrying, pgOutboxGrew int
}

// soak is one run: its files, its daemons and what it did to them.
type soak struct {
	cfg              config
	out              io.Writer
	dir, bin, dbPath string
	addr             string
	api              *api
	w                *writer
	disk             *disk // nil when the disk-full fault is skipped
	daemonLog        *os.File
	began            time.Time
	rng              *rand.Rand // the controller's decisions
	fleet            *fleetDB   // -fleet: the fleet database; nil without
	skew             *skewNode  // -fleet: the second node; nil without

	ledger
}

// ledger is what the run did and found so far, shared by the controller
// and the rotations' goroutine under mu.
type ledger struct {
	mu                sync.Mutex
	f                 faults
	down              bool // no daemon runs
	rotationsThisDown int
	peakRSS           int64 // kB
	problems          []string
	blocks            blockWatch // -fleet
}

const (
	diskSize = 16 << 20 // the database's tmpfs at first
	diskMore = 4 << 20  // what each disk-full episode grows it by
)

func (s *soak) say(format string, args ...any) {
	fmt.Fprintf(s.out, "%7.1fs  %s\n", time.Since(s.began).Seconds(), fmt.Sprintf(format, args...))
}

// problem records something that makes the run fail, besides the counts.
func (s *soak) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
	s.say("PROBLEM: %s", msg)
}

func run(ctx context.Context, c config, out io.Writer) int {
	s := &soak{cfg: c, out: out, rng: rand.New(rand.NewPCG(c.seed, 1))}
	fmt.Fprintf(out, "soak: seed %d (repeat with -seed %d); %s at %d lines/s, rotating every %s, window %s ending at the %s\n",
		c.seed, c.seed, c.duration, c.rate, c.rotate, c.window, c.windowEnd)
	dir, err := os.MkdirTemp("", "logtally-soak-")
	if err != nil {
		fmt.Fprintln(out, "soak:", err)
		return 1
	}
	s.dir = dir
	defer s.cleanup()
	if err := s.setup(ctx); err != nil {
		fmt.Fprintln(out, "soak:", err)
		if errors.Is(err, errNoPostgres) {
			return 2
		}
		return 1
	}
	r, err := s.soak(ctx)
	if err != nil {
		fmt.Fprintln(out, "soak:", err)
		if ctx.Err() != nil {
			return 1
		}
	}
	return s.print(r)
}

func (s *soak) cleanup() {
	if s.skew != nil {
		s.skew.close()
	}
	if s.fleet != nil {
		s.fleet.owner.close()
	}
	if s.daemonLog != nil {
		s.daemonLog.Close()
	}
	if s.disk != nil {
		if s.cfg.keep {
			// The tmpfs goes with its mount: keep a copy of the database.
			if data, err := os.ReadFile(s.dbPath); err == nil {
				os.WriteFile(filepath.Join(s.dir, "logtally.db"), data, 0o644)
			}
		}
		if err := s.disk.unmount(); err != nil {
			fmt.Fprintln(s.out, "soak:", err)
		}
	}
	if s.cfg.keep {
		fmt.Fprintf(s.out, "soak: kept %s (access.log*, daemon.log, logtally.db; with -fleet also backup.db, skew/, clash*/)\n", s.dir)
		return
	}
	os.RemoveAll(s.dir)
}

func (s *soak) setup(ctx context.Context) error {
	s.bin = s.cfg.bin
	if s.bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		s.bin = filepath.Join(s.dir, "logtally")
		t := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", s.bin, "./cmd/logtally")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/logtally: %v\n%s", err, out)
		}
		fmt.Fprintf(s.out, "soak: built %s in %.1fs\n", s.bin, time.Since(t).Seconds())
	}
	dbDir := filepath.Join(s.dir, "db")
	d, err := mountDisk(dbDir, diskSize)
	if err != nil {
		fmt.Fprintf(s.out, "soak: disk full: SKIPPED: cannot mount a tmpfs for the database (%v); "+
			"logtally has no injection point for failing commits outside its tests, so this run fills no disk\n", err)
		if err := os.MkdirAll(dbDir, 0o755); err != nil {
			return err
		}
	} else {
		s.disk = d
		fmt.Fprintf(s.out, "soak: database on a %d MiB tmpfs at %s\n", diskSize>>20, dbDir)
	}
	s.dbPath = filepath.Join(dbDir, "logtally.db")
	port, err := freePort()
	if err != nil {
		return err
	}
	s.addr = "127.0.0.1:" + strconv.Itoa(port)
	s.api = newAPI(s.addr)
	if s.cfg.fleet {
		if err := s.startFleet(); err != nil {
			return err
		}
		s.api.scope = "node" // the node's own counts, which the rest of the checks compare
	}
	s.daemonLog, err = os.Create(filepath.Join(s.dir, "daemon.log"))
	return err
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run soak inside the logtally module (go run ./bench/soak), or give -bin")
	}
	return filepath.Dir(mod), nil
}

func (s *soak) logPath() string { return filepath.Join(s.dir, "access.log") }

// runArgs are the arguments of a `logtally run`.
func (s *soak) runArgs(windowEnd string) []string {
	args := []string{"run", "--db", s.dbPath, "--tz", "UTC", "--admin-listen", s.addr, "--window-end", windowEnd,
		"--window", s.cfg.window.String(), "--log-level", "warn"}
	if s.cfg.fleet {
		args = append(args, "--fleet", s.fleet.server.URL(), "--visitor-secret-file", s.secretPath(), "--node", nodeName,
			"--fleet-refresh", "250ms")
	}
	return append(args, s.logPath())
}

// secretPath is the fleet's visitor secret, written on first use.
func (s *soak) secretPath() string {
	path := filepath.Join(s.dir, "visitor.secret")
	if _, err := os.Stat(path); err != nil {
		os.WriteFile(path, []byte("the soak test's fleet visitor secret"), 0o600)
	}
	return path
}

// start starts a daemon with the run's --window-end.
func (s *soak) start() (*daemon, error) { return s.startWith(s.cfg.windowEnd) }

func (s *soak) startWith(windowEnd string) (*daemon, error) {
	fmt.Fprintf(s.daemonLog, "=== %s start\n", time.Now().Format(time.RFC3339Nano))
	d, err := startDaemon(s.bin, s.runArgs(windowEnd), s.daemonLog)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.down = false
	s.mu.Unlock()
	return d, nil
}

// ended takes note of a daemon that is gone: its peak RSS, and whether it
// went by itself.
func (s *soak) ended(d *daemon) {
	s.mu.Lock()
	s.peakRSS = max(s.peakRSS, d.peakRSS())
	s.mu.Unlock()
	if !d.stopped {
		s.mu.Lock()
		s.f.unexpectedExits++
		s.mu.Unlock()
		s.problem("logtally run exited by itself after %s: %v (see daemon.log)", time.Since(d.started).Round(time.Millisecond), d.err)
	}
}

// rotate rotates the log, by copytruncate or by rename.
func (s *soak) rotate(copytruncate bool, why string) error {
	if err := s.w.rotate(copytruncate); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	s.mu.Lock()
	how := "rename"
	if copytruncate {
		s.f.copytruncates++
		how = "copytruncate"
	} else {
		s.f.renames++
	}
	down := s.down
	if down {
		s.f.rotationsDown++
		s.rotationsThisDown++
	}
	s.mu.Unlock()
	state := "daemon up"
	if down {
		state = "daemon down"
	}
	s.say("rotate (%s, %s%s)", how, state, why)
	return nil
}

// rotateEvery rotates the log every interval until stop is closed; about
// one rotation in three is a copytruncate, and the first one is.
func (s *soak) rotateEvery(stop <-chan struct{}, interval time.Duration, rng *rand.Rand) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
		s.mu.Lock()
		ct := s.f.copytruncates == 0 || rng.IntN(3) == 0
		s.mu.Unlock()
		if err := s.rotate(ct, ""); err != nil {
			return err
		}
	}
}

// randDuration returns a duration from lo to hi.
func (s *soak) randDuration(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// soak runs the writer, the rotations and the daemons for the duration,
// then checks what is stored.
func (s *soak) soak(ctx context.Context) (*result, error) {
	s.began = time.Now()
	if err := s.newWriters(); err != nil {
		return nil, err
	}
	defer s.w.close()
	bg := &jobs{stop: make(chan struct{}), problem: s.problem}
	defer bg.end()
	bg.run(func() error { return s.w.run(bg.stop, 10*time.Millisecond) })
	rotRNG := rand.New(rand.NewPCG(s.cfg.seed, 2))
	bg.run(func() error { return s.rotateEvery(bg.stop, s.cfg.rotate, rotRNG) })
	if s.skew != nil {
		bg.run(func() error { return s.skew.w.run(bg.stop, 10*time.Millisecond) })
		if err := s.startSkewNode(ctx); err != nil {
			return nil, err
		}
		bg.run(func() error { return s.watchBlocked(bg.stop, s.api, s.skew.api) })
	}

	d, err := s.lives(ctx)
	if err == nil && s.fleet != nil {
		d, err = s.lateFaults(ctx, d)
	}
	if err == nil {
		err = bg.end()
	}
	if err != nil {
		if d != nil {
			d.kill()
		}
		return nil, err
	}
	written, _ := s.w.truth()
	s.say("writing stopped: %d lines written", written)
	s.exercised()
	return s.check(ctx, d)
}

// newWriters makes the run's writers: the log's, with poison lines in
// -fleet, and then the skewed node's too.
func (s *soak) newWriters() error {
	start := s.began.Truncate(time.Second)
	src := source{seed: s.cfg.seed, rate: s.cfg.rate}
	if s.fleet != nil {
		src.edit = poison
		var err error
		if s.skew, err = s.newSkewNode(start); err != nil {
			return err
		}
	}
	var err error
	s.w, err = newWriter(s.logPath(), src, start)
	return err
}

// jobs are what runs beside the daemons until the duration is over: the
// writers, the rotations, the watch of the fleet's shipping.
type jobs struct {
	stop    chan struct{}
	problem func(format string, args ...any)
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	ended   bool
}

// run runs f until it returns; its error is a problem, and end's.
func (j *jobs) run(f func() error) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		if err := f(); err != nil {
			j.mu.Lock()
			j.err = errors.Join(j.err, err)
			j.mu.Unlock()
			j.problem("%v", err)
		}
	}()
}

// end stops the jobs, waits for them, and returns their errors.
func (j *jobs) end() error {
	if !j.ended {
		close(j.stop)
		j.wg.Wait()
		j.ended = true
	}
	return j.err
}

// lives starts, kills and restarts daemons until the duration is over, and
// returns the daemon that runs then (nil if none does).
func (s *soak) lives(ctx context.Context) (*daemon, error) {
	deadline := s.began.Add(s.cfg.duration)
	for life := 1; time.Now().Before(deadline); life++ {
		d, err := s.start()
		if err != nil {
			return nil, err
		}
		if life > 1 {
			s.mu.Lock()
			s.f.restarts++
			s.mu.Unlock()
		}
		up, killInFull, err := s.duringLife(ctx, d, life)
		if err != nil {
			return d, err
		}
		if left := time.Until(deadline); up >= left {
			if err := sleep(ctx, left); err != nil {
				return d, err
			}
			if d.exited() {
				s.ended(d)
				return nil, nil
			}
			return d, nil
		}
		if err := sleep(ctx, up); err != nil {
			return d, err
		}
		s.kill(d, killInFull)
		if err := s.downtime(ctx, life); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// duringLife does what happens to a daemon while it runs, besides the
// rotations: its database's disk fills up, or the fleet database goes
// away. It returns how much longer the daemon is to run before it is
// killed, and whether it is to be killed while its disk is full.
func (s *soak) duringLife(ctx context.Context, d *daemon, life int) (up time.Duration, killInFull bool, err error) {
	if s.disk != nil && (life == 2 || life > 2 && s.rng.IntN(6) == 0) {
		if killInFull, err = s.diskFull(ctx, d); err != nil {
			return 0, false, err
		}
	}
	up = s.randDuration(100*time.Millisecond, s.cfg.maxUp)
	if killInFull {
		up = 0
	} else if s.fleet != nil && life >= 3 && s.f.clashes == 0 {
		if err := s.nameTaken(ctx); err != nil {
			return 0, false, err
		}
	}
	if s.fleet != nil && up > 0 && (life == 1 || s.rng.IntN(3) == 0) {
		// The fleet database goes away while the daemon runs.
		before := s.randDuration(0, up/2)
		if err := sleep(ctx, before); err != nil {
			return 0, false, err
		}
		down := s.randDuration(500*time.Millisecond, 3*time.Second)
		if err := s.restartFleet(ctx, down); err != nil {
			return 0, false, err
		}
		up = max(up-before-down, 0)
	}
	return up, killInFull, nil
}

// kill kills d as a crash would (SIGKILL), and takes note that no daemon
// runs.
func (s *soak) kill(d *daemon, inFullDisk bool) {
	killed := d.kill()
	s.ended(d)
	s.mu.Lock()
	if killed {
		s.f.kills++
	}
	s.down, s.rotationsThisDown = true, 0
	s.mu.Unlock()
	if killed {
		full := ""
		if inFullDisk {
			full = ", disk full"
		}
		s.say("kill -9 after %s up (VmHWM %d MB%s)", time.Since(d.started).Round(time.Millisecond), d.peakRSS()>>10, full)
	}
}

// growIfFull grows the database's disk if a disk-full episode left it
// full, and reports whether it did.
func (s *soak) growIfFull() (bool, error) {
	if s.disk == nil {
		return false, nil
	}
	if _, err := os.Stat(s.disk.filler); err != nil {
		return false, nil
	}
	return true, s.disk.grow(diskMore)
}

// downtime is what happens between two runs: rotations, gzip of rotated
// files, a replay, a pause. The first downtime does all of them.
func (s *soak) downtime(ctx context.Context, life int) error {
	if grown, err := s.growIfFull(); err != nil {
		return err
	} else if grown {
		s.say("disk grown to %d MiB while down", s.disk.size>>20)
	}
	first := life == 1
	if first || s.rng.IntN(4) == 0 {
		for range 2 {
			if err := s.rotate(s.rng.IntN(3) == 0, ", two in one downtime"); err != nil {
				return err
			}
		}
	}
	if first || s.rng.IntN(3) == 0 {
		// logrotate's delaycompress leaves PATH.1 as it is, some of the time.
		from := 1 + s.rng.IntN(2)
		n, err := s.w.gzip(from)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		if n > 0 {
			s.mu.Lock()
			s.f.gzipDowntimes++
			s.f.gzipFiles += n
			s.mu.Unlock()
			s.say("gzip %d rotated files from .%d on (daemon down)", n, from)
		}
	}
	if s.fleet != nil {
		if err := s.identityDowntime(ctx, life); err != nil {
			return err
		}
	}
	// replay has no fleet mode: what it counts would never reach the fleet
	// database (docs/fleet.md), so a fleet soak does not replay.
	if s.fleet == nil && (first || s.rng.IntN(3) == 0) {
		if err := s.replay(ctx, s.rng.IntN(2) == 0); err != nil {
			return err
		}
	}
	if err := sleep(ctx, s.randDuration(0, s.cfg.maxDown)); err != nil {
		return err
	}
	s.mu.Lock()
	if s.rotationsThisDown >= 2 {
		s.f.doubleRotationDowntimes++
	}
	s.mu.Unlock()
	return nil
}

var replaySummary = regexp.MustCompile(`replay: (\d+) files, (\d+) lines read`)

// replay runs `logtally replay` on every rotated copy, and on the live log
// too when live is set, as an operator would between two runs: what run
// already counted adds nothing, and what replay counts run does not count
// again (docs/replay-and-report.md: "Replaying a file twice, or the .gz of a file that run
// already read, adds nothing").
func (s *soak) replay(ctx context.Context, live bool) error {
	s.w.rot.Lock() // the files keep their names while replay reads them
	defer s.w.rot.Unlock()
	cs, err := s.w.copies()
	if err != nil {
		return err
	}
	var files []string
	for _, r := range cs {
		files = append(files, s.w.name(r))
	}
	if live {
		files = append(files, s.logPath())
	}
	if len(files) == 0 {
		return nil
	}
	args := append([]string{"replay", "--db", s.dbPath, "--tz", "UTC", "--log-level", "warn"}, files...)
	fmt.Fprintf(s.daemonLog, "=== %s replay of %d files\n", time.Now().Format(time.RFC3339Nano), len(files))
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Stderr = s.daemonLog
	out, err := cmd.Output()
	s.daemonLog.Write(out)
	if err != nil {
		s.problem("logtally replay: %v: %s", err, out)
		return nil
	}
	m := replaySummary.FindSubmatch(out)
	if m == nil {
		s.problem("logtally replay printed no summary: %q", out)
		return nil
	}
	lines, _ := strconv.ParseInt(string(m[2]), 10, 64)
	s.mu.Lock()
	s.f.replays++
	s.f.replayLines += lines
	s.mu.Unlock()
	what := "rotated files"
	if live {
		what = "rotated files and the live log"
	}
	s.say("replay of %d %s (daemon down): %d lines read", len(files), what, lines)
	return nil
}

// diskFull fills the database's tmpfs under a running daemon, waits for its
// commits to fail (/readyz 503), holds it full a moment, and then either
// grows the disk and waits for the daemon to catch up, or reports that the
// daemon is to be killed while full (the disk then grows while it is down).
func (s *soak) diskFull(ctx context.Context, d *daemon) (killWhileFull bool, err error) {
	if !waitFor(ctx, d, 10*time.Second, func() bool { return s.api.ready(ctx) == 200 }) {
		if d.exited() {
			return false, nil // ended() reports it
		}
		s.problem("disk full: the daemon was not ready within 10s of its start")
		return false, nil
	}
	if err := s.disk.fill(); err != nil {
		return false, fmt.Errorf("fill the tmpfs: %w", err)
	}
	s.mu.Lock()
	s.f.diskFull++
	s.mu.Unlock()
	t := time.Now()
	if waitFor(ctx, d, 30*time.Second, func() bool { return s.api.ready(ctx) == 503 }) {
		s.mu.Lock()
		s.f.diskFullFailed++
		s.mu.Unlock()
		s.say("disk full: commits fail after %s (/readyz 503), reading paused", time.Since(t).Round(time.Millisecond))
	} else if !d.exited() {
		s.say("disk full: no commit failed within 30s (bbolt had room in its file)")
	}
	if err := sleep(ctx, s.randDuration(500*time.Millisecond, 3*time.Second)); err != nil {
		return false, err
	}
	if s.rng.IntN(3) == 0 {
		s.mu.Lock()
		s.f.killedInFull++
		s.mu.Unlock()
		return true, nil
	}
	if err := s.disk.grow(diskMore); err != nil {
		return false, err
	}
	t = time.Now()
	if waitFor(ctx, d, 30*time.Second, func() bool { return s.api.ready(ctx) == 200 }) {
		s.say("disk grown to %d MiB: ready again after %s", s.disk.size>>20, time.Since(t).Round(time.Millisecond))
	} else if !d.exited() {
		s.problem("disk grown to %d MiB, but /readyz is not 200 after 30s", s.disk.size>>20)
	}
	return false, nil
}
