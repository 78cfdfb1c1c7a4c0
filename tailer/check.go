package tailer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CheckFollowed reports a path or glob that following could never read: an
// unreadable file, a path that is not a regular file (a directory, a FIFO, a
// device), a bad glob, or a missing directory. Each error names the path and
// says what to do. A file that does not exist yet in an existing directory
// is fine; it is picked up once it appears. It never blocks, not even on a
// FIFO without a writer.
func CheckFollowed(paths []string) error {
	var errs []error
	for _, p := range paths {
		if strings.ContainsAny(p, `*?[\`) {
			if _, err := filepath.Glob(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			} else if _, err := os.Stat(filepath.Dir(p)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			}
			continue
		}
		f, err := openRegular(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if _, err := os.Stat(filepath.Dir(p)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			}
		case err != nil:
			errs = append(errs, withFix(err, p, false))
		default:
			f.Close()
		}
	}
	return errors.Join(errs...)
}

// CheckReplayed reports a file that a replay could not read: missing,
// unreadable, or not a regular file (a directory, a FIFO, a device such as
// /dev/zero). It runs before anything is read, so a typo costs nothing, and
// never blocks.
func CheckReplayed(paths []string) error {
	var errs []error
	for _, p := range paths {
		f, err := openRegular(p)
		if err != nil {
			errs = append(errs, withFix(err, p, true))
			continue
		}
		f.Close()
	}
	return errors.Join(errs...)
}
