package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/poll"
)

// replayLogs runs `logtally replay args...` and returns its summary line.
func replayLogs(t *testing.T, args ...string) string {
	t.Helper()
	m := NewMain()
	m.Keys = testKey // reproducible estimates of visitors
	var out bytes.Buffer
	m.Stdout, m.Stderr = &out, io.Discard
	if err := m.ParseFlags(append([]string{"replay"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func linesRead(t *testing.T, summary string) int {
	t.Helper()
	var files, read int
	if _, err := fmt.Sscanf(summary, "replay: %d files, %d lines read", &files, &read); err != nil {
		t.Fatalf("summary %q: %v", summary, err)
	}
	return read
}

func gzipTo(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReplayTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	writeLog(t, log, 20_000)
	if n := linesRead(t, replayLogs(t, "--db", db, log)); n != 20_000 {
		t.Fatalf("first replay read %d lines, want 20000", n)
	}
	before := storedRequests(t, db)
	if n := linesRead(t, replayLogs(t, "--db", db, log)); n != 0 {
		t.Errorf("second replay read %d lines, want 0", n)
	}
	gzipTo(t, log, log+".gz")
	if n := linesRead(t, replayLogs(t, "--db", db, log+".gz")); n != 0 {
		t.Errorf("replay of the .gz read %d lines, want 0", n)
	}
	if after := storedRequests(t, db); after != before || before == 0 {
		t.Errorf("stored requests %d after replaying again, want %d", after, before)
	}
}

func TestReplayFileAndItsGzipAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	writeLog(t, log, 5_000)
	gzipTo(t, log, log+".1.gz")
	if n := linesRead(t, replayLogs(t, "--db", filepath.Join(dir, "db"), log+".1.gz", log)); n != 5_000 {
		t.Errorf("replay of a file and its .gz read %d lines, want 5000", n)
	}
}

// TestReplayGzipOfLiveFileChangesNothing: run follows a log, which is then
// rotated and compressed; replaying the .gz adds nothing.
func TestReplayGzipOfLiveFileChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	clk := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	var lines []string
	for i := range 300 {
		lines = append(lines, line(fmt.Sprintf("192.0.2.%d", i%50), clk.At(-time.Duration(i)*time.Second), "GET /p HTTP/1.1", 200, browser))
	}
	appendLines(t, log, lines[:200]...)
	m := start(t, clk.Now, "run", "--db", db, "--admin-listen", "127.0.0.1:0", log)
	poll.Until(t, "lines read live", func() bool { return m.pipeline().Lines() == 200 })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	appendLines(t, log, lines[200:]...) // written after the daemon stopped
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	gzipTo(t, log+".1", log+".1.gz")
	os.Remove(log + ".1")

	if n := linesRead(t, replayLogs(t, "--db", db, log+".1.gz")); n != 100 {
		t.Errorf("replay of the .gz read %d lines, want the 100 not read live", n)
	}
	if n := linesRead(t, replayLogs(t, "--db", db, log+".1.gz")); n != 0 {
		t.Errorf("second replay of the .gz read %d lines, want 0", n)
	}
	if got := storedRequests(t, db); got != 300 {
		t.Errorf("stored requests = %d, want 300", got)
	}
}

func TestReplayLongLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendLines(t, log,
		line("192.0.2.1", "21/Nov/2026:12:00:00 +0000", "GET /a HTTP/1.1", 200, browser),
		line("192.0.2.1", "21/Nov/2026:12:00:01 +0000", "GET /"+strings.Repeat("x", 3000)+" HTTP/1.1", 200, browser),
		line("192.0.2.1", "21/Nov/2026:12:00:02 +0000", "GET /b HTTP/1.1", 200, browser))
	out := replayLogs(t, "--db", filepath.Join(dir, "db"), "--max-line", "1000", log)
	if !strings.HasPrefix(out, "replay: 1 files, 3 lines read, 2 parsed, 1 rejected") || !strings.Contains(out, "line too long: 1") {
		t.Errorf("replay = %q, want 3 read, 2 parsed, 1 rejected as too long", out)
	}
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	got := progressLine(100e6, 400e6, 500_000, time.Second)
	want := "[#######-----------------------]  25% 100.0 MB/400.0 MB  500000 lines/s  3s left"
	if got != want {
		t.Errorf("progressLine = %q\nwant           %q", got, want)
	}
}
