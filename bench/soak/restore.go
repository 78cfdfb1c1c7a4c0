package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A restored local database (-fleet): once, a node whose database was
// restored from a backup and which restarted cut off from PostgreSQL
// numbered its new batches with numbers the fleet held, and they were
// deleted as duplicates. Now each batch carries its checksum and its
// parent's and the fleet keeps the node's read positions: started cut off,
// the restored node counts locally and stops shipping once it reaches the
// fleet database ("behind the fleet"); restarted, it reads on from the
// fleet's positions, and the fleet counts every line once (docs/fleet.md).
// The node's own counts are a restored backup's: the lines it read past
// the fleet's positions before that restart count twice in them.

// backupPath is where the soak keeps the copy of the node's database.
func (s *soak) backupPath() string { return filepath.Join(s.dir, "backup.db") }

// backup copies the stopped node's database aside, as a nightly backup
// would, and notes how many lines were written then.
func (s *soak) backup() error {
	if err := copyFile(s.dbPath, s.backupPath()); err != nil {
		return fmt.Errorf("back up the database: %w", err)
	}
	written, _ := s.w.truth()
	s.mu.Lock()
	s.f.backupLines = written
	s.mu.Unlock()
	s.say("database backed up (daemon down, %d lines written)", written)
	return nil
}

// restore stops PostgreSQL, puts the backup in the node's database's
// place, starts the node cut off from the fleet (the log rotates
// meanwhile), brings PostgreSQL back,
// waits for the node to stop shipping (its database is behind the fleet),
// and stops it, for the next life to restart it as the docs say.
func (s *soak) restore(ctx context.Context) error {
	if err := pg(s.fleet.server.StopImmediate); err != nil {
		return err
	}
	tmp := s.dbPath + ".restore"
	if err := copyFile(s.backupPath(), tmp); err != nil {
		return fmt.Errorf("restore the database: %w", err)
	}
	if err := os.Rename(tmp, s.dbPath); err != nil {
		return fmt.Errorf("restore the database: %w", err)
	}
	d, err := s.start()
	if err != nil {
		return err
	}
	cutOff := s.randDuration(time.Second, 3*time.Second)
	s.say("database restored from the backup; started with postgres down, counting locally for %s", cutOff.Round(time.Millisecond))
	// A rotation meanwhile: a file the fleet has no position of yet.
	if err := s.cutOff(ctx, cutOff); err != nil {
		d.kill()
		return err
	}
	if err := pg(s.fleet.server.Restart); err != nil {
		d.kill()
		return err
	}
	var said string
	stopped := waitFor(ctx, d, 20*time.Second, func() bool {
		var st fleetStatus
		code, err := s.api.get(ctx, "/api/v1/status", &st)
		if err != nil || code != 200 || st.Fleet == nil {
			return false
		}
		said = st.Fleet.LastError
		return st.Fleet.State == "stopped" && strings.Contains(said, "behind the fleet")
	})
	if err := d.stop(15 * time.Second); err != nil {
		s.problem("restored database: SIGTERM: %v", err)
	}
	s.ended(d)
	s.noteRestore(stopped, said)
	return nil
}

// cutOff lets the restored node count cut off from the fleet for a while,
// with a rotation by rename halfway: the new log is a file the fleet holds
// no read position of, whose lines the node reads only while cut off.
func (s *soak) cutOff(ctx context.Context, d time.Duration) error {
	if err := sleep(ctx, d/2); err != nil {
		return err
	}
	if err := s.rotate(false, ", the restored node cut off from postgres"); err != nil {
		return err
	}
	return sleep(ctx, d-d/2)
}

// noteRestore counts a restore, and the lines the node's own counts may
// now hold twice: at most those written since the backup.
func (s *soak) noteRestore(stopped bool, said string) {
	written, _ := s.w.truth()
	s.mu.Lock()
	s.down = true
	s.f.restores++
	s.f.restarts++
	s.f.allowDoubled = written - s.f.backupLines
	if stopped {
		s.f.restoreStopped++
		s.f.restoreSaid = said
	}
	s.mu.Unlock()
	if !stopped {
		s.problem("restored database: the node did not stop shipping within 20s of reaching postgres (last error %q); docs/fleet.md says it does", said)
		return
	}
	s.say("postgres back: the restored node stopped shipping (%s); stopped, to restart on the fleet's positions", shorten(said, 90))
}

// shorten cuts text to n bytes, marking the cut.
func shorten(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return text[:n] + "..."
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

// identityDowntime backs up the node's database in the second downtime,
// restores it in the first downtime from 45% of the run on, and restarts
// the skewed node in the first from 60% on (restartSkewNode).
func (s *soak) identityDowntime(ctx context.Context, life int) error {
	s.mu.Lock()
	backedUp, restored := s.f.backupLines > 0, s.f.restores > 0
	s.mu.Unlock()
	elapsed := time.Since(s.began)
	switch {
	case life == 2 && !backedUp:
		if err := s.backup(); err != nil {
			return err
		}
	case backedUp && !restored && elapsed >= s.cfg.duration*45/100:
		if err := s.restore(ctx); err != nil {
			return err
		}
	}
	if s.skew.restarts == 0 && elapsed >= s.cfg.duration*3/5 {
		return s.restartSkewNode(ctx)
	}
	return nil
}

// lateFaults does, once the duration is over, the faults of -fleet that
// no life or downtime got to (a life can last long while its disk is
// full), so that every one happens in every run: it returns the daemon
// that runs then, nil if it stopped it.
func (s *soak) lateFaults(ctx context.Context, d *daemon) (*daemon, error) {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f.clashes == 0 {
		if err := s.nameTaken(ctx); err != nil {
			return d, err
		}
	}
	if s.skew.restarts == 0 {
		if err := s.restartSkewNode(ctx); err != nil {
			return d, err
		}
	}
	if f.restores > 0 || f.backupLines == 0 { // no backup: exercised says so
		return d, nil
	}
	if d != nil {
		s.kill(d, false)
	}
	return nil, s.restore(ctx)
}
