package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// checkDBPath reports why run or replay could not create or write the
// database at path, and the keys file beside it, before anything is
// created: the directory is missing or not writable (a read-only
// directory, a file system mounted read-only), or the file is not one
// this user may write. It only asks the system (access(2)), so it changes
// nothing; root may write anything but a read-only file system.
func checkDBPath(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("--db %s: is a directory: give a file in it, such as --db %s", path, filepath.Join(path, "logtally.db"))
	case err == nil:
		if err := unix.Access(path, unix.R_OK|unix.W_OK); err != nil {
			return fmt.Errorf("--db %s: %w: user %s cannot write it: give it to that user (chown %s %s), or run logtally as its owner",
				path, accessErr(err), whoami(), whoami(), path)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--db %s: %w", path, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--db %s: no directory %s: create it (mkdir -p %s), or give --db a file in a directory that exists", path, dir, dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("--db %s: %w: user %s cannot create files in %s (the database, and its keys file beside it): "+
			"give --db a file in a directory it may write (the systemd unit's is /var/lib/logtally), or make %s writable for it",
			path, accessErr(err), whoami(), dir, dir)
	}
	return nil
}

// accessErr is err, which access(2) returned, as the error the file system
// would give on a write: permission denied, or a read-only file system.
func accessErr(err error) error {
	if errors.Is(err, unix.EROFS) {
		return fmt.Errorf("read-only file system: %w", fs.ErrPermission)
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return fs.ErrPermission
	}
	return err
}

// whoami names the user logtally runs as, for the messages: by name if
// it has one, else by number.
func whoami() string {
	uid := strconv.Itoa(os.Geteuid())
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return uid
}
