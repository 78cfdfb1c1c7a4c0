package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/storage"
)

// damageBucket writes garbage over the root page of a bucket of the
// default site (minutes, visitors, ...) of the database file at path, as a
// failing disk or a bad copy would. The garbage is always the same, so that
// what check says of it is too.
func damageBucket(path, bucket string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	var page, size int64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("sites")).Bucket([]byte(logtally.DefaultSite)).Bucket([]byte(bucket))
		if b == nil {
			return errors.New("no bucket " + bucket)
		}
		page, size = int64(b.Root()), int64(db.Info().PageSize)
		return nil
	})
	db.Close()
	if err != nil {
		return err
	}
	if page == 0 {
		return errors.New("bucket " + bucket + " is inline: it has no page of its own")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt(bytes.Repeat([]byte("garbage!"), int(size)/8), page*size)
	return err
}

// damageDB is the scripts' command: damagedb FILE BUCKET.
func damageDB(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: damagedb FILE BUCKET")
	}
	ts.Check(damageBucket(ts.MkAbs(args[0]), args[1]))
}

// replayed returns a database file that a replay of generated lines wrote.
func replayed(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "logtally.db")
	writeLog(t, log, 2000)
	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, io.Discard
	if err := m.ParseFlags([]string{"replay", "--db", db, log}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDamagedDatabaseRefusedBeforeServing: run on a damaged file says so,
// names the file and the command that tells more, and exits with status 3
// (which the systemd unit does not restart on) before it serves anything.
// Before, it logged "serving", then panicked inside bbolt (exit 2) when a
// request or a commit first read the damaged page, at every restart.
func TestDamagedDatabaseRefusedBeforeServing(t *testing.T) {
	t.Parallel()
	db := replayed(t)
	if err := damageBucket(db, "minutes"); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ := child(t, 30*time.Second, "run", "--db", db, "--admin-listen", "127.0.0.1:0")
	want := "logtally: " + db + ": database file is damaged: per-minute counts (bucket sites/default/minutes): "
	if code != exitDamaged || !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "; run 'logtally check --db "+db+"' for what is damaged and how to recover") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 3 and %s...", code, stderr, want)
	}
	if strings.Contains(stderr, "serving") {
		t.Errorf("it served before refusing:\n%s", stderr)
	}

	var out bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr = &out, io.Discard
	if err := m.ParseFlags([]string{"check", "--db", db}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); !errors.Is(err, storage.ErrDamaged) {
		t.Errorf("check: %v, want ErrDamaged", err)
	}
	for _, want := range []string{db + " is damaged:\n  per-minute counts (bucket sites/default/minutes): ",
		"restore " + db + " from a backup", "logtally replay --db " + db} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check printed:\n%s\nwant %q in it", out.String(), want)
		}
	}
}

// TestSecondDaemonSaysInUse: a second daemon on the database of a running
// one says, within about a second, that another process (which, on Linux)
// has the file. Before, it said "timeout".
func TestSecondDaemonSaysInUse(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "logtally.db")
	start(t, time.Now, "run", "--db", db, "--admin-listen", "127.0.0.1:0")
	code, stderr, took := child(t, 30*time.Second, "run", "--db", db, "--admin-listen", "127.0.0.1:0")
	want := "logtally: open " + db + ": database file is in use by another process"
	if code != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "stop that process first, or give this one another --db") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %s...", code, stderr, want)
	}
	if _, err := os.Stat("/proc/locks"); err == nil && !strings.Contains(stderr, "(pid "+strconv.Itoa(os.Getpid())+")") {
		t.Errorf("stderr does not name this process, which holds the file:\n%s", stderr)
	}
	if took > 5*time.Second { // a second of waiting for the lock, and a child's start
		t.Errorf("refused after %s", took)
	}
}
