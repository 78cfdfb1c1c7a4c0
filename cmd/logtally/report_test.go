package main

import (
	"bytes"
	"context"
	"errors"
	"github.com/logtally/logtally/internal/golden"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/report"
	"github.com/logtally/logtally/storage"
)

// archive is a generated log of three days and a bit in May 2015:
//
//	go run ./cmd/loggen -seed 2 -lines 1000 -start 2015-05-17T00:00:00Z -step 270s -hosts 80 -paths 40 -bad-every 0
var archive = filepath.Join("..", "..", "testdata", "archive-2015.log")

// reportOf runs `logtally report args...` and returns what it printed, or
// its error.
func reportOf(t *testing.T, args ...string) (string, error) {
	t.Helper()
	m := NewMain()
	var out bytes.Buffer
	m.Stdout, m.Stderr = &out, io.Discard
	if err := m.ParseFlags(append([]string{"report"}, args...)); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	if cerr := m.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return out.String(), err
}

// TestReportGolden: the report of a replayed archive, in its three forms.
// With no --from or --to it covers the last days held, from the first with
// a line.
func TestReportGolden(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	replayLogs(t, "--db", db, "--tz", "UTC", archive)
	for _, f := range []struct{ golden, flag string }{
		{"report.table.golden", ""}, {"report.json.golden", "--json"}, {"report.csv.golden", "--csv"},
	} {
		args := []string{"--db", db, "--tz", "UTC"}
		if f.flag != "" {
			args = append(args, f.flag)
		}
		got, err := reportOf(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", f.golden), []byte(got), *update)
	}
}

// TestReportOfDaysNotKept: days whose daily counts the retention dropped
// are shown as not kept, and counted in nothing.
func TestReportOfDaysNotKept(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	replayLogs(t, "--db", db, "--tz", "UTC", "--keep-days", "2d", archive)
	got, err := reportOf(t, "--db", db, "--tz", "UTC", "--from", "2015-05-16", "--to", "2015-05-20", "--pages", "3")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "report-not-kept.table.golden"), []byte(got), *update)
}

// TestReportWhileRunning: bbolt lets no other process open the file while
// a running logtally holds it; report waits for the lock, then says so and
// where else to look.
func TestReportWhileRunning(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	replayLogs(t, "--db", db, "--tz", "UTC", archive)
	daemon, err := storage.Open(storage.Config{Path: db, TZ: "UTC"}, nil) // as run holds it
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err = reportOf(t, "--db", db)
	if !errors.Is(err, storage.ErrLocked) || !strings.Contains(err.Error(), "/api/v1/pages?from=DAY&to=DAY") {
		t.Errorf("report while the file is held: %v, want ErrLocked and where else to look", err)
	}
	if waited := time.Since(began); waited < reportLockWait-100*time.Millisecond {
		t.Errorf("gave up after %s, want %s", waited, reportLockWait)
	}
	daemon.Close()
	if _, err := reportOf(t, "--db", db); err != nil {
		t.Errorf("report once the file is free: %v", err)
	}
}

func TestReportOfEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	s, err := storage.Open(storage.Config{Path: db}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := reportOf(t, "--db", db); !errors.Is(err, report.ErrEmpty) {
		t.Errorf("report of an empty database: %v, want ErrEmpty", err)
	}
	if _, err := reportOf(t, "--db", db+".missing"); err == nil {
		t.Error("report of a missing file: no error")
	} else if _, statErr := os.Stat(db + ".missing"); statErr == nil {
		t.Error("report created the file it was asked to read")
	}
}

// TestReportListsStoredCounters: the database knows its counters, so
// report shows a section for each without their declarations (one that
// matched nothing too, with zeros), and refuses to report a counter the
// database does not hold, naming those it does.
func TestReportListsStoredCounters(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	conf := filepath.Join("..", "..", "testdata", "counters.conf")
	replayLogs(t, "--db", db, "--tz", "UTC", "--counters", conf, "--counter", "never=GET /never/{id}",
		filepath.Join("..", "..", "testdata", "counters.log"))
	got, err := reportOf(t, "--db", db, "--tz", "UTC", "--pages", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"counter show: 263 lines", "counter click: 64 lines", "counter read: 146 lines",
		"counter cart: 83 lines", "counter never: 0 lines"} {
		if !strings.Contains(got, want) {
			t.Errorf("report without --counters: no %q in\n%s", want, got)
		}
	}
	_, err = reportOf(t, "--db", db, "--tz", "UTC", "--counter", "nosuch=GET /nosuch/{id}")
	if err == nil || !strings.Contains(err.Error(), "--counter nosuch") || !strings.Contains(err.Error(), "cart, click, never, read, show") {
		t.Errorf("report of a counter the database lacks: %v; want an error naming it and those held", err)
	}
}
