package tailer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CheckFollowed reports a path or glob that following could never read: an unreadable
// file, a directory, a bad glob, or a missing directory. A file that does
// not exist yet in an existing directory is fine; it is picked up once it
// appears.
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
		f, err := os.Open(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if _, err := os.Stat(filepath.Dir(p)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			}
		case err != nil:
			errs = append(errs, err)
		default:
			fi, err := f.Stat()
			f.Close()
			if err == nil && fi.IsDir() {
				errs = append(errs, fmt.Errorf("%s is a directory", p))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckReplayed reports a file that a replay could not read: missing or
// unreadable. It runs before anything is opened, so a typo costs nothing.
func CheckReplayed(paths []string) error {
	var errs []error
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
