package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/logtally/logtally/internal/pgtest"
)

// pgOwner stands in for a test as the owner of the soak's PostgreSQL
// (pgtest.T): its files go in the soak's directory, and what would fail a
// test ends the run with an error (pgFailure, recovered by pg).
type pgOwner struct {
	dir      string
	out      io.Writer
	cleanups []func()
	failed   bool
}

// pgFailure is what a Fatalf or Skipf of pgtest panics with.
type pgFailure struct{ msg string }

func (o *pgOwner) Helper() {}

func (o *pgOwner) TempDir() string {
	d, err := os.MkdirTemp(o.dir, "pg")
	if err != nil {
		panic(pgFailure{err.Error()})
	}
	return d
}

func (o *pgOwner) Cleanup(f func())                 { o.cleanups = append(o.cleanups, f) }
func (o *pgOwner) Skipf(format string, args ...any) { panic(pgFailure{fmt.Sprintf(format, args...)}) }
func (o *pgOwner) Fatalf(format string, args ...any) {
	o.failed = true
	panic(pgFailure{fmt.Sprintf(format, args...)})
}
func (o *pgOwner) Errorf(format string, args ...any) {
	o.failed = true
	fmt.Fprintf(o.out, "soak: postgres: %s\n", fmt.Sprintf(format, args...))
}
func (o *pgOwner) Logf(format string, args ...any) { fmt.Fprintf(o.out, format+"\n", args...) }
func (o *pgOwner) Failed() bool                    { return o.failed }

// close runs the cleanups, the last registered first, as a test's are.
func (o *pgOwner) close() {
	for i := len(o.cleanups) - 1; i >= 0; i-- {
		o.cleanups[i]()
	}
	o.cleanups = nil
}

// pg runs f, one of pgtest's calls, and returns what it would have failed
// a test with.
func pg(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if pf, ok := r.(pgFailure); ok {
				err = fmt.Errorf("postgres: %s", pf.msg)
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}

// nodeName is the --node of the soak's daemons (-fleet).
const nodeName = "soak"

// errNoPostgres is why a -fleet run cannot start: the PostgreSQL server
// is not installed. The soak exits with 2 on it, not 1: nothing was soaked.
var errNoPostgres = errors.New("-fleet needs the PostgreSQL server (apt-get install postgresql); fleet mode not soaked")

// fleetDB is the run's fleet database, for -fleet, and its owner.
type fleetDB struct {
	owner  *pgOwner
	server *pgtest.Server
}

// startFleet starts the run's fleet database, for -fleet.
func (s *soak) startFleet() error {
	if err := pgtest.Available(); err != nil {
		return fmt.Errorf("%w: %v", errNoPostgres, err)
	}
	db := &fleetDB{owner: &pgOwner{dir: s.dir, out: s.out}}
	s.fleet = db // for cleanup to close the owner, whatever Start did
	if err := pg(func() { db.server = pgtest.Start(db.owner) }); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "soak: fleet database on 127.0.0.1:%d; every run ships to it as node %s\n", db.server.Port(), nodeName)
	return nil
}

// restartFleet stops the fleet database as a crash would, keeps it down
// for down, and starts it again on the same data and port: the daemon's
// commits wait in its outbox meanwhile.
func (s *soak) restartFleet(ctx context.Context, down time.Duration) error {
	if err := pg(s.fleet.server.StopImmediate); err != nil {
		return err
	}
	s.say("postgres stopped (immediate) for %s", down.Round(time.Millisecond))
	retrying, grew := s.watchOutage(ctx, down)
	s.mu.Lock()
	s.f.pgRestarts++
	if retrying {
		s.f.pgRetrying++
	}
	if grew {
		s.f.pgOutboxGrew++
	}
	s.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return pg(s.fleet.server.Restart)
}

// watchOutage polls /api/v1/status while the fleet database is down, for
// down, and reports whether the daemon said it was retrying and whether its
// outbox grew meanwhile (commits go on without the fleet database). Both
// are counted, not required: a daemon that is still connecting, or whose
// next shipment falls after the restart, says neither, and is not wrong.
func (s *soak) watchOutage(ctx context.Context, down time.Duration) (retrying, grew bool) {
	end := time.Now().Add(down)
	first := int64(-1)
	for time.Now().Before(end) && ctx.Err() == nil {
		var st fleetStatus
		if code, err := s.api.get(ctx, "/api/v1/status", &st); err == nil && code == 200 && st.Fleet != nil {
			retrying = retrying || st.Fleet.State == "retrying"
			if first < 0 {
				first = st.Fleet.PendingBatches
			}
			grew = grew || st.Fleet.PendingBatches > first
		}
		sleep(ctx, min(100*time.Millisecond, time.Until(end)))
	}
	return retrying, grew
}

// fleetStatus is what /api/v1/status says of fleet mode.
type fleetStatus struct {
	Fleet *struct {
		State          string `json:"state"`
		PendingBatches int64  `json:"pending_batches"`
		LastError      string `json:"last_error"`
	} `json:"fleet"`
}

// exercised reports as a problem each fault of -fleet that a run of 30 s
// or more did not get to: every one must happen in the minute CI runs.
func (s *soak) exercised() {
	if s.fleet == nil || s.cfg.duration < 30*time.Second {
		return
	}
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	for _, c := range []struct {
		what string
		miss bool
	}{
		{"postgres stopped under a running node", f.pgRestarts == 0},
		{"poison lines", s.w.oddities().raw == 0},
		{"a node started twice with one name", f.clashes == 0},
		{"a restored local database", f.restores == 0},
		{"lines beyond the skewed node's --max-skew", s.skew.w.oddities().refused == 0},
		{"the skewed node's restart (and its pruning)", s.skew.restarts == 0},
	} {
		if c.miss {
			s.problem("fault not exercised: %s", c.what)
		}
	}
}
