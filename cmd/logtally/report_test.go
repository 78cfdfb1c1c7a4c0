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
// a running logtally holds it; report then reports from a consistent copy
// that the running logtally's admin API writes, and says so, and prints
// what it prints from the file. With no logtally answering at --daemon, it
// says so and where else to look. Before, report could not run while the
// daemon ran.
func TestReportWhileRunning(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	replayLogs(t, "--db", db, "--tz", "UTC", archive)
	want, err := reportOf(t, "--db", db)
	if err != nil {
		t.Fatal(err)
	}

	holder, err := storage.Open(storage.Config{Path: db, TZ: "UTC"}, nil) // holds it, with no API
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err = reportOf(t, "--db", db, "--daemon", "127.0.0.1:1")
	if !errors.Is(err, storage.ErrLocked) || !strings.Contains(err.Error(), "127.0.0.1:1 (--daemon)") ||
		!strings.Contains(err.Error(), "/api/v1/pages?from=DAY&to=DAY") {
		t.Errorf("report while the file is held by no API: %v, want ErrLocked, --daemon and where else to look", err)
	}
	if waited := time.Since(began); waited < reportLockWait-100*time.Millisecond {
		t.Errorf("gave up after %s, want %s", waited, reportLockWait)
	}
	holder.Close()

	m := start(t, time.Now, "run", "--db", db, "--admin-listen", "127.0.0.1:0")
	r := NewMain()
	var out, stderr bytes.Buffer
	r.Stdout, r.Stderr = &out, &stderr
	if err := r.ParseFlags([]string{"report", "--db", db, "--daemon", m.Addr()}); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("report while the daemon runs: %v", err)
	}
	r.Close()
	if got := out.String(); got != want {
		t.Errorf("report from the daemon's copy:\n%s\nwant, as from the file:\n%s", got, want)
	}
	if msg := stderr.String(); !strings.Contains(msg, db+" is held by a running logtally: reporting from a consistent copy") ||
		!strings.Contains(msg, "through its admin API at "+m.Addr()) {
		t.Errorf("stderr: %q, want it to say the report is of a copy taken through the admin API", msg)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	replayLogs(t, "--db", other, "--tz", "UTC", archive)
	holder, err = storage.Open(storage.Config{Path: other, TZ: "UTC"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := reportOf(t, "--db", other, "--daemon", m.Addr()); err == nil || !strings.Contains(err.Error(), "the logtally there holds "+db) {
		t.Errorf("report of a file another logtally holds, asking this one: %v, want a refusal", err)
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

// TestZoneKeptWithTheDatabase: a database keeps the zone its days are cut
// in. A replay with another --tz is refused, naming the flag, rather than
// cut the next days elsewhere, and so is a report with another --tz, which
// says why; without --tz both take the stored zone, and the report is
// labelled with it. Before, the replay in Berlin moved a 23:30 UTC line to
// the next day, and `report --tz Europe/Berlin` printed the UTC days
// labelled "(Europe/Berlin)".
func TestZoneKeptWithTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	replayLogs(t, "--db", db, "--tz", "UTC", archive)
	late := filepath.Join(dir, "late.log")
	os.WriteFile(late, []byte(`198.18.0.9 - - [20/May/2015:23:30:00 +0000] "GET /late HTTP/1.1" 200 100 "-" "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"`+"\n"), 0o600)

	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, io.Discard
	if err := m.ParseFlags([]string{"replay", "--db", db, "--tz", "Europe/Berlin", late}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	m.Close()
	if !errors.Is(err, storage.ErrZone) || !strings.Contains(err.Error(), "--tz Europe/Berlin") || !strings.Contains(err.Error(), "omit --tz") {
		t.Errorf("replay in another zone: %v, want ErrZone naming --tz and the fix", err)
	}
	replayLogs(t, "--db", db, late)
	got, err := reportOf(t, "--db", db, "--from", "2015-05-20", "--to", "2015-05-21", "--csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "\nday,2015-05-20,,41,") || !strings.Contains(got, "\nday,2015-05-21,,0,") {
		t.Errorf("the 23:30 UTC line is not on 2015-05-20 in UTC:\n%s", got)
	}
	if table, _ := reportOf(t, "--db", db); !strings.Contains(table, "(UTC)") {
		t.Errorf("the report is not labelled with the stored zone:\n%s", table)
	}
	_, err = reportOf(t, "--db", db, "--tz", "Europe/Berlin")
	if !errors.Is(err, storage.ErrZone) || !strings.Contains(err.Error(), "cannot cut them again") {
		t.Errorf("report in another zone: %v, want ErrZone saying it cannot", err)
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
