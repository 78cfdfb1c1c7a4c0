package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/loggen"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
)

// TestCrashRecoveryIsExact kills a replaying child with SIGKILL at random
// moments, restarts it each time, and finally lets it finish: every stored
// minute must then equal a recount from the log. Each life commits on a
// goroutine of its own while it applies the next lines.
func TestCrashRecoveryIsExact(t *testing.T) {
	t.Parallel()
	const kills = 20
	lines := 60_000
	if testing.Short() {
		lines = 20_000
	}
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	g := loggen.New(loggen.Config{Seed: 7, Start: time.Now().Add(-2 * time.Hour).Truncate(time.Minute),
		Step: 100 * time.Millisecond, Hosts: 3000, Paths: 60, BadEvery: 97})
	var data []byte
	for range lines {
		data = g.Line(data)
	}
	if err := os.WriteFile(log, data, 0o644); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(11, 12))
	var stderr bytes.Buffer
	startDB := func(db string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=replay --db "+db+" --flush-lines 700 --tz UTC "+log)
		stderr.Reset()
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	start := func() *exec.Cmd { return startDB(db) }

	// How long an uninterrupted run takes here, so that the kills land
	// within runs whatever the machine's speed.
	began := time.Now()
	if err := startDB(filepath.Join(dir, "timing.db")).Wait(); err != nil {
		t.Fatalf("timing run: %v\n%s", err, stderr.String())
	}
	full := time.Since(began)

	killed, grown := 0, 0
	for killed < kills {
		cmd := start()
		// A random moment in the first tenth of a full run: each life makes
		// a little progress, so it takes many kills to get through the log.
		time.Sleep(time.Duration(rng.Int64N(int64(full)/10 + 1)))
		cmd.Process.Signal(syscall.SIGKILL)
		if err := cmd.Wait(); err == nil {
			// It finished before the kill: the log grows, as a live one
			// would, and the kills go on.
			more := make([]byte, 0, len(data)/4)
			for range lines / 4 {
				more = g.Line(more)
			}
			f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(more)
			f.Close()
			data = append(data, more...)
			grown++
			continue
		}
		killed++
	}
	t.Logf("killed %d times; the log grew %d times; a full run takes %s", killed, grown, full)
	if err := start().Wait(); err != nil {
		t.Fatalf("final run: %v\n%s", err, stderr.String())
	}

	s, err := storage.Open(storage.Config{Path: db, TZ: "UTC"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, bad := recount(t, data)
	got, err := s.Minutes(time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// A rejected line has no time of its own: it is counted in the minute of
	// the newest line of its batch, or of the clock when its batch has no
	// parsed line. Only the total of rejected lines is exact, so minutes that
	// hold nothing else are set aside.
	var rejected int64
	var counted []logtally.Bucket
	for _, m := range got {
		rejected += m.Rejected
		m.Rejected = 0
		if m.Requests > 0 {
			counted = append(counted, m)
		}
	}
	if len(counted) != len(want) {
		t.Fatalf("%d minutes stored, want %d", len(counted), len(want))
	}
	for i, m := range counted {
		if fmt.Sprint(m) != fmt.Sprint(want[i]) {
			t.Fatalf("minute %s:\n got %+v\nwant %+v", m.Time, m.Counts, want[i].Counts)
		}
	}
	if rejected != bad {
		t.Errorf("rejected = %d, want %d", rejected, bad)
	}
}

// recount computes every minute from the raw log, independently of the
// batching that stored it. Its key is not the daemon's: a minute's
// distinct visitors, all of one day, are the same under any key.
func recount(t *testing.T, data []byte) ([]logtally.Bucket, int64) {
	t.Helper()
	format, err := parser.New("combined")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := classify.New(classify.DefaultConfig(), classify.Fixed{})
	if err != nil {
		t.Fatal(err)
	}
	type acc struct {
		logtally.Counts
		visitors map[uint64]bool
		paths    map[string]int64
	}
	minutes := map[int64]*acc{}
	var bad int64
	var rec parser.Record
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		if format.Parse(line, &rec) != nil {
			bad++
			continue
		}
		h := rules.Classify(&rec)
		k := h.Time / 60
		a := minutes[k]
		if a == nil {
			a = &acc{visitors: map[uint64]bool{}, paths: map[string]int64{}}
			minutes[k] = a
		}
		a.Requests++
		a.Bytes += rec.Bytes
		a.Status[rec.Status/100-1]++
		if h.PageView {
			a.PageViews++
			a.visitors[h.Visitor] = true
			a.paths[string(h.Path)]++
		}
	}
	var out []logtally.Bucket
	for _, k := range slices.Sorted(func(yield func(int64) bool) {
		for k := range minutes {
			if !yield(k) {
				return
			}
		}
	}) {
		a := minutes[k]
		a.Visitors = int64(len(a.visitors))
		for p, n := range a.paths {
			a.Top = append(a.Top, logtally.PageCount{Path: p, PageViews: n})
		}
		slices.SortFunc(a.Top, func(x, y logtally.PageCount) int {
			if x.PageViews != y.PageViews {
				return int(y.PageViews - x.PageViews)
			}
			return strings.Compare(x.Path, y.Path)
		})
		if len(a.Top) > storage.DefaultConfig().TopPages {
			t.Fatalf("minute %d has %d paths; the test expects all in the top list", k, len(a.Top))
		}
		out = append(out, logtally.Bucket{Time: time.Unix(k*60, 0).UTC(), Counts: a.Counts})
	}
	return out, bad
}
