package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrFileGone means the database file was deleted, or replaced by another
// file, while the store had it open. Commits still succeed, but into a file
// that no one can open again: what they hold is lost when the store closes.
var ErrFileGone = errors.New("database file deleted or replaced while open")

// fileState is what the store knows of its file beyond bbolt: which file
// it opened, to tell whether its path still names it, and the damage that
// a read or write found in it.
type fileState struct {
	info   os.FileInfo
	damage damageMemo
}

// FileErr reports whether the store's path still names the file it has
// open: nil if it does, or cannot tell; an error wrapping ErrFileGone if
// the file was deleted or replaced. It costs one stat, so it may be asked
// at every /readyz.
func (s *Store) FileErr() error {
	info, err := os.Stat(s.cfg.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w: it was deleted", s.cfg.Path, ErrFileGone)
	case err != nil || s.file.info == nil:
		return nil // cannot tell: a directory not readable for a moment, say
	case !os.SameFile(info, s.file.info):
		return fmt.Errorf("%s: %w: it was replaced by another file", s.cfg.Path, ErrFileGone)
	}
	return nil
}

// FileFix is what to do about ErrFileGone.
const FileFix = "restore the file from a backup and restart logtally; or restart it to begin a new file, " +
	"in which it counts the followed logs again from their start (replay older archives to count them too)"

// WatchFile checks every interval, until ctx is done, that the store's
// path still names its file (FileErr), and logs it, with the fix, the first
// time it does not.
func (s *Store) WatchFile(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.FileErr(); err != nil {
			log.Error("database file gone: what is counted from now on is lost when logtally stops",
				"path", s.cfg.Path, "err", err, "fix", FileFix)
			return // once: the file does not come back
		}
	}
}

// Damage returns what is known to be damaged in the store's file (a
// *DamageError, naming the file), or nil: what a guarded read or write
// found, the values queries met and skipped, and what Verify found. It
// costs no read of the file.
func (s *Store) Damage() error {
	d := s.file.damage.known()
	if d == nil {
		return nil
	}
	d.Path = s.cfg.Path
	return d
}

// Backup writes a consistent copy of the store's file to w, as one read
// transaction sees it (bbolt's tx.WriteTo), while commits go on: a file
// another logtally may open read-only as it would the file itself. size
// is called with the copy's length before anything is written.
func (s *Store) Backup(w io.Writer, size func(n int64)) error {
	return s.view(func(tx *bolt.Tx) error {
		size(tx.Size())
		_, err := tx.WriteTo(w)
		return err
	})
}
