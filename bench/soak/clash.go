package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A node started twice with one name (-fleet): once, two processes given
// one --node, each with its own database, shared one sequence of batches,
// so that each was taken for a duplicate of the other's and about half
// the lines were dropped, with no warning. A node is now its database,
// registered under its name: a second database under a taken name is
// refused at start (fleet.ErrNameTaken, docs/fleet.md). The soak starts
// such a second process on the same log while the first runs, and wants
// it to exit with an error that names the taken name; the final check
// then finds every line of the first in the fleet, once.

// errNameTaken is what logtally says of a name another database holds.
const errNameTaken = "node name held by another database"

// clashWait is how long the second process may take to be refused: it
// reaches the fleet database, which is up, and is refused before it reads.
const clashWait = 30 * time.Second

// identityFaults counts what the soak did to the node's identity (-fleet):
// a second process under its name, a backup of its database and its
// restore.
type identityFaults struct {
	clashes, clashRefused    int
	clashSaid                string        // logtally's error, for the table
	clashTook                time.Duration // from start to refusal
	backupLines              int64         // lines written when the backup was made; -1 before
	restores, restoreStopped int
	restoreSaid              string // the node's last_error once it reached the fleet database
	// allowDoubled is how many lines the node's own counts may hold twice
	// after a restore: those it read between the backup's time and its
	// restart (docs/fleet.md: the node's own counts are not undone).
	allowDoubled int64
}

// nameTaken starts a second `logtally run` with a fresh database under the
// running node's --node, on the same log and fleet database, and checks
// that it is refused.
func (s *soak) nameTaken(ctx context.Context) error {
	dir, err := os.MkdirTemp(s.dir, "clash")
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{"run", "--db", filepath.Join(dir, "logtally.db"), "--tz", "UTC", "--admin-listen", "127.0.0.1:" + strconv.Itoa(port),
		"--log-level", "warn", "--fleet", s.fleet.server.URL(), "--visitor-secret-file", s.secretPath(), "--node", nodeName, "--fleet-refresh", "250ms", s.logPath()}
	var out bytes.Buffer
	t := time.Now()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var exit error
	select {
	case exit = <-done:
	case <-time.After(clashWait):
		cmd.Process.Kill()
		<-done
		s.problem("name taken: a second database under --node %s still ran after %s: not refused (see %s)", nodeName, clashWait, dir)
		return nil
	}
	took := time.Since(t)
	fmt.Fprintf(s.daemonLog, "=== %s second process under --node %s:\n%s", time.Now().Format(time.RFC3339Nano), nodeName, out.Bytes())
	said := firstLine(out.String(), errNameTaken)
	var ee *exec.ExitError
	refused := errors.As(exit, &ee) && said != ""
	s.mu.Lock()
	s.f.clashes++
	if refused {
		s.f.clashRefused++
		s.f.clashSaid, s.f.clashTook = said, took
	}
	s.mu.Unlock()
	if !refused {
		s.problem("name taken: a second database under --node %s exited with %v, without %q: %.300s", nodeName, exit, errNameTaken, out.String())
		return nil
	}
	s.say("name taken: a second process under --node %s with a fresh database refused after %s (%v)", nodeName, took.Round(time.Millisecond), exit)
	return nil
}

// firstLine returns the first line of text that holds sub, "" if none.
func firstLine(text, sub string) string {
	for line := range strings.Lines(text) {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
