package keyring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var paris = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err)
	}
	return loc
}()

// day1 is a time within 2026-03-05 in Paris; its day ends at day1End.
var (
	day1    = time.Date(2026, 3, 5, 12, 0, 0, 0, paris).Unix()
	day1End = time.Date(2026, 3, 6, 0, 0, 0, 0, paris).Unix()
)

const keep = 10*time.Minute + Grace

// openRing opens the keys file in dir, logging to log.
func openRing(t *testing.T, path string, log *bytes.Buffer) *Ring {
	t.Helper()
	r, err := OpenFile(path, paris, keep, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// keyBytes is a key as the file holds it.
func keyBytes(k0, k1 uint64) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, k0), k1)
}

// TestRandomKeyKeptUntilItsDayIsOver: a day's random key is the same for
// every second of the day and across a restart, another the next day;
// once a line past the day's end plus keep is committed, the key is
// destroyed, logged, and its bytes are gone from the file.
func TestRandomKeyKeptUntilItsDayIsOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logtally.db.keys")
	var log bytes.Buffer
	r := openRing(t, path, &log)
	k0, k1 := r.At(day1)
	if a, b := r.At(day1End - 1); a != k0 || b != k1 {
		t.Fatal("two keys within a day")
	}
	if a, b := r.At(day1End); a == k0 && b == k1 {
		t.Fatal("the next day has the same key")
	}
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r = openRing(t, path, &log)
	if a, b := r.At(day1); a != k0 || b != k1 {
		t.Fatal("a restart changed the day's key")
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, keyBytes(k0, k1)) {
		t.Fatal("the key is not in the file before it retires: the scan below proves nothing")
	}
	if gone, err := r.Advance(day1End + int64(keep/time.Second) - 1); len(gone) != 0 || err != nil {
		t.Fatalf("Advance before the grace ends = %v, %v", gone, err)
	}
	gone, err := r.Advance(day1End + int64(keep/time.Second))
	if err != nil || len(gone) != 1 || gone[0] != 20260305 {
		t.Fatalf("Advance = %v, %v; want [20260305]", gone, err)
	}
	if !strings.Contains(log.String(), "visitor key destroyed") || !strings.Contains(log.String(), "day=2026-03-05") {
		t.Errorf("log = %q, want the destruction of 2026-03-05's key", log.String())
	}
	raw, _ = os.ReadFile(path)
	if bytes.Contains(raw, keyBytes(k0, k1)) {
		t.Error("the retired key's bytes are still in the file")
	}
	// A line of the retired day gets a key of its own, never kept.
	if a, b := r.At(day1); a == k0 && b == k1 {
		t.Error("a retired day's key came back")
	}
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(path)
	if n := bytes.Count(raw[len(fileMagic):], []byte{0x01, 0x35, 0x2b, 0x11}); n != 0 { // 20260305 big-endian
		t.Errorf("a late line's key of 2026-03-05 was kept")
	}
}

// TestUnsavedKeyRetiredFirst: a key made and retired before any Save is
// never written.
func TestUnsavedKeyRetiredFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	var log bytes.Buffer
	r := openRing(t, path, &log)
	k0, k1 := r.At(day1)
	if _, err := r.Advance(day1End + int64(keep/time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(path); bytes.Contains(raw, keyBytes(k0, k1)) || len(raw) != len(fileMagic) {
		t.Errorf("file holds %d bytes after a key retired unsaved", len(raw))
	}
}

// TestAtAllocatesNothing: the hot path, once its day is known.
func TestAtAllocatesNothing(t *testing.T) {
	var log bytes.Buffer
	r := openRing(t, filepath.Join(t.TempDir(), "keys"), &log)
	r.At(day1)
	if n := testing.AllocsPerRun(100, func() { r.At(day1 + 5) }); n != 0 {
		t.Errorf("At: %v allocs", n)
	}
}

// TestSecretKeys: every node given one secret derives one key a day, and
// nothing else; the verifier is neither a key nor the secret.
func TestSecretKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, err := ReadSecret(write("a", bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ReadSecret(write("b", bytes.Repeat([]byte{2}, 32)))
	var log bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&log, nil))
	ra, ra2, rb := a.Ring(paris, keep, lg), a.Ring(paris, keep, lg), b.Ring(paris, keep, lg)
	k0, k1 := ra.At(day1)
	if x, y := ra2.At(day1); x != k0 || y != k1 {
		t.Error("one secret, two keys for a day")
	}
	if x, y := rb.At(day1); x == k0 && y == k1 {
		t.Error("two secrets, one key")
	}
	if x, y := ra.At(day1End); x == k0 && y == k1 {
		t.Error("two days, one key")
	}
	if v := a.Verifier(); bytes.Equal(v, b.Verifier()) || bytes.Contains(v, keyBytes(k0, k1)) || len(v) != 32 {
		t.Errorf("verifier %x", v)
	}
	_, err = ReadSecret(write("short", []byte("password")))
	if err == nil || !strings.Contains(err.Error(), "head -c 32 /dev/urandom >") || !strings.Contains(err.Error(), "--visitor-secret-file") {
		t.Errorf("short secret: %v", err)
	}
}

// TestFileCutShort: a start killed before it wrote the header, or while it
// wrote a key at the end, leaves a file the next start opens: with no
// keys, or without the key cut short, which no commit used.
func TestFileCutShort(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	openRing(t, empty, &log)
	cut := filepath.Join(dir, "cut")
	r := openRing(t, cut, &log)
	k0, k1 := r.At(day1)
	r.Save()
	r.Close()
	raw, _ := os.ReadFile(cut)
	os.WriteFile(cut, append(raw, 0x01, 0x35, 0x2b), 0o600) // a second key, cut short
	r = openRing(t, cut, &log)
	if a, b := r.At(day1); a != k0 || b != k1 {
		t.Error("the whole key was lost")
	}
	os.WriteFile(filepath.Join(dir, "other"), []byte("not a keys file at all"), 0o600)
	if _, err := OpenFile(filepath.Join(dir, "other"), paris, keep, slog.New(slog.NewTextHandler(&log, nil))); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenFile of another file = %v, want ErrCorrupt", err)
	}
}
