package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/internal/sweep"
	"github.com/logtally/logtally/keyring"
	"github.com/logtally/logtally/storage"
)

// visitorNets are the /16s the visitors of these tests come from: a sweep
// hashes every address in them (see package sweep).
var visitorNets = []netip.Prefix{netip.MustParsePrefix("10.7.0.0/16")}

// sweepSample is how many random addresses a sweep hashes besides.
const sweepSample = 1 << 16

// keysInFile returns the keys a keys file holds, read as someone with the
// machine would: every slot of its format.
func keysInFile(t *testing.T, path string) []sweep.Key {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []sweep.Key
	for off := 8; off+24 <= len(b); off += 24 {
		if binary.BigEndian.Uint32(b[off:]) != 0 {
			out = append(out, sweep.Key{K0: binary.LittleEndian.Uint64(b[off+8:]), K1: binary.LittleEndian.Uint64(b[off+16:])})
		}
	}
	return out
}

// keyBytes is a key as the keys file holds it.
func keyBytes(k sweep.Key) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, k.K0), k.K1)
}

// storedMinuteHashes returns the exact visitor sets that the database at
// path holds of the minutes in [from, to].
func storedMinuteHashes(t *testing.T, path string, from, to time.Time) map[uint64]bool {
	t.Helper()
	s, err := storage.OpenReadOnly(storage.Config{Path: path, TZ: "UTC"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := make(map[uint64]bool)
	for m := from; !m.After(to); m = m.Add(time.Minute) {
		set, _, err := s.MinuteVisitors(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range set {
			out[h] = true
		}
	}
	return out
}

// replayReal runs `logtally replay args...` with the program's own keys,
// and returns its log.
func replayReal(t *testing.T, args ...string) string {
	t.Helper()
	m := NewMain()
	var out bytes.Buffer
	m.Stdout, m.Stderr = io.Discard, &out
	if err := m.ParseFlags(append([]string{"replay", "--log-level", "info"}, args...)); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	m.Close()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	return out.String()
}

// TestRetiredKeyLeavesTheDisk replays a day, then the next day past the
// rotation grace: while the first day is counted, its key is in the keys
// file and turns its stored hashes back into addresses (the sweep works);
// once a line past the day's end plus the window plus keyring.Grace is
// committed, the key's bytes are in neither the keys file nor the
// database, the destruction is logged, and no key left on disk ties the
// first day's hashes to an address.
func TestRetiredKeyLeavesTheDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, keys := filepath.Join(dir, "logtally.db"), keyring.FilePath(filepath.Join(dir, "logtally.db"))
	day1 := time.Date(2026, 3, 5, 23, 0, 0, 0, time.UTC)
	write := func(name string, from time.Time, n int, step time.Duration) string {
		var b strings.Builder
		for i := range n {
			at := from.Add(time.Duration(i) * step)
			fmt.Fprintln(&b, line(fmt.Sprintf("10.7.%d.%d", i%3, i%50+1), at.Format("02/Jan/2006:15:04:05 -0700"), "GET / HTTP/1.1", 200, browser))
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	replayReal(t, "--db", db, "--tz", "UTC", write("day1.log", day1, 200, 15*time.Second))
	found := keysInFile(t, keys)
	hashes := storedMinuteHashes(t, db, day1, day1.Add(time.Hour))
	if len(found) != 1 || len(hashes) == 0 {
		t.Fatalf("after day 1: %d keys in %s, %d stored hashes", len(found), keys, len(hashes))
	}
	if got := sweep.Match(sweep.Found{Keys: found}, hashes, visitorNets, 0, 1); len(got) != len(hashes) {
		t.Fatalf("with the day's key, %d of %d hashes turn back into addresses: the sweep does not work", len(got), len(hashes))
	}
	retired := found[0]

	// Day 2, until 02:11: past 00:00 + the 10-minute window + the 2-hour grace.
	log := replayReal(t, "--db", db, "--tz", "UTC", write("day2.log", day1.Add(time.Hour), 132, time.Minute))
	if !strings.Contains(log, "visitor key destroyed") || !strings.Contains(log, "day=2026-03-05") {
		t.Errorf("replay's log does not tell of 2026-03-05's key destroyed:\n%s", log)
	}
	for _, path := range []string{keys, db} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, keyBytes(retired)) {
			t.Errorf("%s still holds the retired key's bytes", path)
		}
	}
	left := keysInFile(t, keys)
	if len(left) != 1 || left[0] == retired {
		t.Fatalf("keys left: %v, want day 2's alone", left)
	}
	if got := sweep.Match(sweep.Found{Keys: left}, hashes, visitorNets, sweepSample, 2); len(got) != 0 {
		t.Errorf("day 1's hashes tied to addresses after its key retired: %v", got)
	}
}

// TestFleetVisitorsAcrossMidnight runs two fleet nodes whose live window
// holds a day boundary of log time: a visitor is an address within one
// day, so the window's visitors are the distinct (day, address) pairs of
// both nodes, exactly. Then, from the PostgreSQL database and both nodes'
// bbolt files alone, no key is to be found, and no stored hash is tied to
// an address; the same sweep with the keys the secret derives finds every
// one (the sweep works).
func TestFleetVisitorsAcrossMidnight(t *testing.T) {
	t.Parallel()
	base := pgtest.Database(t)
	midnight := time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC)
	now := midnight.Add(5 * time.Minute)
	// The database's clock, which the fleet's window ends at, is the nodes'.
	url := base + "&options=" + strings.ReplaceAll(neturl.QueryEscape("-c logtally.now="+now.Format(time.RFC3339)), "+", "%20")
	dir := t.TempDir()
	secret := secretFile(t)
	pairs := map[string]bool{} // day and address
	var nodes []*Main
	for n, name := range []string{"a", "b"} {
		var lines []string
		for i := range 120 {
			at := midnight.Add(-4*time.Minute + time.Duration(i)*4*time.Second) // 23:56 to 00:04
			addr := fmt.Sprintf("10.7.%d.%d", n, i%30+1)
			if i%4 == 0 {
				addr = fmt.Sprintf("10.7.9.%d", i%20+1) // seen by both nodes
			}
			pairs[at.Format(time.DateOnly)+" "+addr] = true
			lines = append(lines, line(addr, at.Format("02/Jan/2006:15:04:05 -0700"), "GET / HTTP/1.1", 200, browser))
		}
		log := filepath.Join(dir, name+".log")
		appendLines(t, log, lines...)
		nodes = append(nodes, start(t, func() time.Time { return now }, "run", "--fleet", url, "--visitor-secret-file", secret,
			"--node", name, "--db", filepath.Join(dir, name+".db"), "--tz", "UTC", "--admin-listen", "127.0.0.1:0",
			"--flush-interval", "20ms", "--fleet-refresh", "50ms", log))
	}
	want := int64(len(pairs))
	for _, m := range nodes {
		poll.Until(t, "every line in the fleet's window", func() bool { return stats(t, m).Requests == 240 })
		if s := stats(t, m); s.Visitors != want {
			t.Errorf("fleet window %+v, want %d visitors: the distinct (day, address) pairs", s, want)
		}
	}
	for _, m := range nodes {
		m.Close()
	}

	hashes := fleetHashes(t, base)
	found := sweep.Found{Keys: fleetKeys(t, base)}
	for _, name := range []string{"a", "b"} {
		db := filepath.Join(dir, name+".db")
		for h := range storedMinuteHashes(t, db, midnight.Add(-10*time.Minute), midnight.Add(10*time.Minute)) {
			hashes[h] = true
		}
		found.Keys = append(found.Keys, keysInFile(t, keyring.FilePath(db))...)
	}
	if len(hashes) < int(want) || len(found.Keys) != 0 {
		t.Fatalf("%d stored hashes (want at least %d), %d keys found in the data", len(hashes), want, len(found.Keys))
	}
	if got := sweep.Match(found, hashes, visitorNets, sweepSample, 3); len(got) != 0 {
		t.Errorf("addresses found from the data alone: %v", got)
	}
	s, err := keyring.ReadSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	var withSecret sweep.Found
	for _, day := range []uint32{20260305, 20260306} {
		k := s.Key(day)
		withSecret.Keys = append(withSecret.Keys, sweep.Key{K0: k.K0, K1: k.K1})
	}
	if got := sweep.Match(withSecret, hashes, visitorNets, 0, 4); len(got) < len(hashes) {
		t.Errorf("with the secret's keys, %d of %d hashes turn back into addresses: the sweep does not work", len(got), len(hashes))
	}
}

// fleetHashes returns every visitor hash the fleet database holds.
func fleetHashes(t *testing.T, url string) map[uint64]bool {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	out := make(map[uint64]bool)
	for _, table := range []string{"minute_visitors", "hour_visitors", "day_visitors", "visitors"} {
		rows, err := conn.Query(context.Background(), "SELECT visitor FROM logtally."+table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out[uint64(v)] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// fleetKeys returns what the fleet database's settings hold that could be
// a key: every bytea of 16 bytes or more, every bigint (a salt was one).
func fleetKeys(t *testing.T, url string) []sweep.Key {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var cols []string
	rows, err := conn.Query(context.Background(),
		"SELECT column_name FROM information_schema.columns WHERE table_schema = 'logtally' AND table_name = 'settings' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, c)
	}
	if want := "created_at id tz verifier"; strings.Join(cols, " ") != want {
		t.Errorf("settings columns %v, want %s", cols, want)
	}
	return nil
}
