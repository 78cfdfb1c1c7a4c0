package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestListenerInUseRefusedBeforeAnything: an address another program
// listens on is refused, naming the flag and the fix, before the database
// and its keys file are created.
func TestListenerInUseRefusedBeforeAnything(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() }) // after the parallel subtests
	addr := taken.Addr().String()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"admin", []string{"--admin-listen", addr}, "--admin-listen " + addr + ": address already in use: another program listens there"},
		{"old name", []string{"--listen", addr}, "stop it, or give --listen another address"},
		{"public", []string{"--admin-listen", "127.0.0.1:0", "--public-listen", addr}, "--public-listen " + addr + ": address already in use"},
		{"profiles", []string{"--admin-listen", "127.0.0.1:0", "--debug-listen", addr}, "--debug-listen " + addr + ": address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			m := NewMain()
			m.Stdout, m.Stderr = io.Discard, io.Discard
			m.Getenv = func(string) (string, bool) { return "", false }
			if err := m.ParseFlags(append([]string{"run", "--db", filepath.Join(dir, "logtally.db")}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			err := m.Run(context.Background())
			m.Close()
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("Run: %v, want an error with %q", err, tt.want)
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("Run created %s before it was refused", left[0].Name())
			}
		})
	}
}

// TestUnwritableDatabaseRefusedBeforeAnything: a database that cannot be
// created (a read-only directory) or written (another user's file) is a
// mistake on the command line, exit status 2, naming --db and the fix,
// before anything is created or served. Root may write anything, so as
// root the program runs as nobody.
func TestUnwritableDatabaseRefusedBeforeAnything(t *testing.T) {
	t.Parallel()
	bin, cred := unprivileged(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	readOnly := filepath.Join(dir, "ro")
	theirs := filepath.Join(dir, "rw")
	for _, d := range []string{readOnly, theirs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(theirs, "logtally.db"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	os.Chmod(readOnly, 0o555)
	os.Chmod(theirs, 0o777)
	tests := []struct {
		name, db string
		want     []string
	}{
		{"read-only directory", filepath.Join(readOnly, "logtally.db"), []string{
			"logtally run: --db " + filepath.Join(readOnly, "logtally.db") + ": permission denied: user ",
			" cannot create files in " + readOnly + " (the database, and its keys file beside it): give --db a file in a directory it may write"}},
		{"another user's file", filepath.Join(theirs, "logtally.db"), []string{
			"logtally run: --db " + filepath.Join(theirs, "logtally.db") + ": permission denied: user ",
			" cannot write it: give it to that user (chown "}},
		{"no directory", filepath.Join(dir, "nope", "logtally.db"), []string{
			"--db " + filepath.Join(dir, "nope", "logtally.db") + ": no directory " + filepath.Join(dir, "nope") + ": create it (mkdir -p "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadDir(filepath.Dir(tt.db))
			code, stderr := childAs(t, bin, cred, "run", "--db", tt.db, "--admin-listen", "127.0.0.1:0")
			if code != 2 {
				t.Errorf("exit status %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if after, _ := os.ReadDir(filepath.Dir(tt.db)); len(after) != len(before) {
				t.Errorf("%d files in %s, %d before", len(after), filepath.Dir(tt.db), len(before))
			}
		})
	}
}

// unprivileged returns the test binary to run as a child and the user to
// run it as: the test's own user, or as root nobody, with a copy of the
// binary that nobody can reach.
func unprivileged(t *testing.T) (bin string, cred *syscall.Credential) {
	t.Helper()
	if os.Geteuid() != 0 {
		return os.Args[0], nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("running as root, with no user nobody to run logtally as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir := t.TempDir()
	// t.TempDir's directories live in one per test, root's and 0700:
	// nobody must be able to pass through it.
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "logtally.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// childAs runs bin, the test binary, as the program with args, as cred's
// user (nil: the test's), and returns its exit status and standard error.
func childAs(t *testing.T, bin string, cred *syscall.Credential, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(args, " "))
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}
