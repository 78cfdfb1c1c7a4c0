package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The shared server: one per test binary, started by the first test that
// asks for a Database and stopped by Main after the last test. A cluster
// costs about a second to make and start, a database a few milliseconds,
// so tests that only read and write share the server and each has a
// database of its own: they stay independent, and may run in parallel.
// A test that stops, restarts or cuts the server (pg_terminate_backend
// reaches every database's clients) starts a Server of its own.
var shared struct {
	managed atomic.Bool  // Main runs the tests: someone will stop the server
	made    atomic.Int64 // databases made, to name them apart
	once    sync.Once
	srv     *Server
	owner   *owner
	err     error // why the server could not start
}

// sharedSettings are the shared server's settings beyond the defaults:
// tests running in parallel each hold a few pools' connections.
var sharedSettings = []string{"max_connections=200"}

// Main runs the test binary's tests, then stops the shared server if a
// test started it, removes its files, and exits with the tests' status.
// A package whose tests call Database calls it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) { os.Exit(Managed(m).Run()) }

// Runner runs a test binary's tests and returns its exit status, as
// *testing.M does.
type Runner interface{ Run() int }

// Managed returns m whose Run, after m's, stops the shared server as Main
// does, and returns the tests' status: for a TestMain that hands its
// tests to something else that runs them, such as testscript.Main:
//
//	testscript.Main(pgtest.Managed(m), commands)
func Managed(m Runner) Runner { return managed{m} }

type managed struct{ m Runner }

func (r managed) Run() int {
	shared.managed.Store(true)
	code := r.m.Run()
	if o := shared.owner; o != nil {
		o.close()
		if o.Failed() && code == 0 {
			code = 1
		}
	}
	return code
}

// Database makes a new, empty database for tb on the test binary's shared
// server and returns its URL; the database is dropped when the test ends.
// It skips the test if PostgreSQL is not installed, as Start does, and
// fails it if the test binary's TestMain does not run Main (or Managed),
// which stops the server.
func Database(tb testing.TB) string {
	tb.Helper()
	if err := Available(); err != nil {
		tb.Skipf("pgtest: PostgreSQL server binaries not found, skipping (install the postgresql package): %v", err)
	}
	if !shared.managed.Load() {
		tb.Fatalf("pgtest: Database needs TestMain to run pgtest.Main or pgtest.Managed, which stop the shared server")
	}
	shared.once.Do(startShared)
	if shared.err != nil {
		tb.Fatalf("pgtest: shared server: %v", shared.err)
	}
	name := databaseName(tb.Name(), shared.made.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	url, err := shared.srv.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := shared.srv.dropDatabase(name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return url
}

// startShared starts the shared server, or records why it cannot.
func startShared() {
	o := &owner{}
	shared.owner = o
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(ownerFailure)
			if !ok {
				panic(r)
			}
			shared.err = f
		}
	}()
	shared.srv = Start(o, sharedSettings...)
}

// databaseName names the n-th database made, after the test it is for: a
// PostgreSQL identifier of at most 63 bytes.
func databaseName(test string, n int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t%d_", n)
	for _, r := range strings.ToLower(test) {
		if b.Len() == 63 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// dropDatabase drops a database, ending the connections a test left open.
func (s *Server) dropDatabase(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// owner stands in for a test as the shared server's owner (T): its
// directories and cleanups last until Main ends, and what would fail a
// test fails the start (ownerFailure, recovered by startShared) or, when
// the server is stopped, the test binary.
type owner struct {
	mu       sync.Mutex
	base     string // holds every TempDir; "" until the first
	cleanups []func()
	failed   bool
}

// ownerFailure is what the owner's Fatalf and Skipf panic with, to end the
// start as they would end a test.
type ownerFailure string

func (f ownerFailure) Error() string { return string(f) }

func (o *owner) Helper() {}

// TempDir returns a new directory inside one of the owner's own, as a
// test's are inside one of the test's: Start running as root opens the
// parent to the postgres user, which must not be the system's /tmp.
func (o *owner) TempDir() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var err error
	if o.base == "" {
		if o.base, err = os.MkdirTemp("", "pgtest"); err != nil {
			panic(ownerFailure(err.Error()))
		}
	}
	d, err := os.MkdirTemp(o.base, "")
	if err != nil {
		panic(ownerFailure(err.Error()))
	}
	return d
}

func (o *owner) Cleanup(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cleanups = append(o.cleanups, f)
}

func (o *owner) Skipf(format string, args ...any) { panic(ownerFailure(fmt.Sprintf(format, args...))) }

func (o *owner) Fatalf(format string, args ...any) {
	o.Errorf(format, args...)
	panic(ownerFailure(fmt.Sprintf(format, args...)))
}

func (o *owner) Errorf(format string, args ...any) {
	o.mu.Lock()
	o.failed = true
	o.mu.Unlock()
	o.Logf(format, args...)
}

func (o *owner) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pgtest: shared server: %s\n", fmt.Sprintf(format, args...))
}

func (o *owner) Failed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed
}

// close runs the cleanups, the last registered first, as a test's are,
// and removes the directories.
func (o *owner) close() {
	o.mu.Lock()
	cleanups, base := o.cleanups, o.base
	o.cleanups, o.base = nil, ""
	o.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	if base != "" {
		os.RemoveAll(base)
	}
}
