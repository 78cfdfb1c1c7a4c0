package tailer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hasMeta reports whether path is a glob rather than a plain path.
func hasMeta(path string) bool { return strings.ContainsAny(path, `*?[\`) }

// match is a regular file that a re-scan found.
type match struct {
	path    string
	stream  string // the plain path it belongs to, if any
	sibling bool   // matched only as a possible rotated copy of stream
	fi      os.FileInfo
	pattern int
}

// scan is what one re-scan found: the regular files the patterns match,
// and what it looked at, by path.
type scan struct {
	matches    []match
	seen       map[string]bool // whether it is a regular file
	notRegular map[string]bool // plain paths that name a FIFO, a device, a directory
}

// add adds the regular files among paths to matches, and returns how many
// there are, counting those added before.
func (s *scan) add(paths []string, stream string, sibling bool, pattern int) (regular int) {
	for _, p := range paths {
		if ok, done := s.seen[p]; done {
			if ok {
				regular++
			}
			continue
		}
		fi, err := os.Stat(p)
		s.seen[p] = err == nil && fi.Mode().IsRegular()
		if !s.seen[p] {
			continue
		}
		regular++
		s.matches = append(s.matches, match{p, stream, sibling, fi, pattern})
	}
	return regular
}

// rescan matches the patterns again and opens the files not open yet. For
// a pattern that is a plain path it also looks at its rotated copies
// (path.1, path.1.gz, path-20261121, ...). It reads those known by
// fingerprint from their position: they are the rest of a file read
// before, renamed or compressed while logtally was not looking. It reads
// one never read from its start if it is named as a rotated copy and is not
// older than the oldest file of the path that was read (see unread): it was
// rotated away before logtally could open it.
func (t *Tailer) rescan() error {
	s := scan{seen: map[string]bool{}, notRegular: map[string]bool{}}
	t.matchPatterns(&s)
	t.matchRotated(&s)
	// Oldest first, so a rotated file is finished before its successor,
	// and the files read before are met before the copies never read.
	// Modification times are only as fine as the kernel's clock tick: a
	// tie is broken by name.
	slices.SortStableFunc(s.matches, func(a, b match) int {
		if c := a.fi.ModTime().Compare(b.fi.ModTime()); c != 0 {
			return c
		}
		return olderName(a.path, b.path)
	})
	t.forget(&s)
	for _, m := range s.matches {
		key := keyOf(m.fi)
		if fl := t.openFile(key); fl != nil {
			t.renamed(fl, m.path, m.fi)
			continue
		}
		if d, ok := t.done[key]; ok && d.size == m.fi.Size() && d.mtime.Equal(m.fi.ModTime()) {
			continue
		}
		if err := t.open(m.path, m.stream, m.sibling, m.pattern); err != nil {
			return err
		}
	}
	return nil
}

// matchPatterns adds to s the files each pattern matches, and reports a
// pattern that matches none, or a path that names no regular file.
func (t *Tailer) matchPatterns(s *scan) {
	for i, p := range t.patterns {
		paths, err := filepath.Glob(p)
		if err != nil {
			t.log.Warn("bad pattern", "pattern", p, "err", err)
			continue
		}
		stream := p
		if hasMeta(p) {
			stream = ""
		}
		if s.add(paths, stream, false, i) > 0 {
			t.report(p, "", nil)
		} else if fi, err := os.Stat(p); err == nil && !hasMeta(p) {
			// A FIFO, a device or a directory at the path: nothing to read
			// by offset. (A glob's matches are its regular files.)
			t.report(p, Unreadable, &NotRegularError{Path: p, Mode: fi.Mode()})
			s.notRegular[p] = true
		} else {
			t.report(p, Missing, nil)
		}
	}
}

// matchRotated adds to s what may be a rotated copy of each plain path:
// its name followed by a dot or a dash and anything.
func (t *Tailer) matchRotated(s *scan) {
	for i, p := range t.patterns {
		if !hasMeta(p) {
			for _, suffix := range []string{".*", "-*"} {
				paths, _ := filepath.Glob(p + suffix)
				s.add(paths, p, true, i)
			}
		}
	}
}

// forget drops what s found gone: an unreadable file that no pattern
// matches any more is no longer a problem, and finished files that are
// gone are forgotten, so done does not grow forever.
func (t *Tailer) forget(s *scan) {
	for p, pr := range t.problems {
		if pr.state == Unreadable && !s.seen[p] && !s.notRegular[p] {
			delete(t.problems, p)
		}
	}
	present := make(map[fileKey]bool, len(s.matches))
	for _, m := range s.matches {
		present[keyOf(m.fi)] = true
	}
	for k := range t.done {
		if !present[k] {
			delete(t.done, k)
		}
	}
}

// openFile returns the open file with key, or nil.
func (t *Tailer) openFile(key fileKey) *file {
	for _, fl := range t.files {
		if fl.key == key {
			return fl
		}
	}
	return nil
}

// renamed gives fl the name path, which a re-scan found it under, once its
// own name no longer names it: a rotated access.log is reported as the
// access.log.1 it now is, not under the name of its successor.
func (t *Tailer) renamed(fl *file, path string, fi os.FileInfo) {
	if path == fl.path {
		return
	}
	if pi, err := os.Stat(fl.path); err == nil && os.SameFile(pi, fi) {
		return // still named by its path too (a hard link)
	}
	t.log.Debug("renamed", "from", fl.path, "to", path)
	fl.path = path
	if fl.state == following {
		fl.state = rotated // its old name is no longer its own
	}
}

// open opens the file at path, unless it is open already or was read to its
// end and has not changed since.
func (t *Tailer) open(path, stream string, sibling bool, pattern int) error {
	f, err := t.openPath(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.report(path, Unreadable, err)
		}
		return nil
	}
	if p := t.problems[path]; p != nil && p.state == Unreadable {
		t.report(path, "", nil)
	}
	// The file is known by what was opened, not by what the re-scan saw
	// at path a moment before: the log may have been rotated in between,
	// and a key taken from the other file would hide this one.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		t.log.Warn("stat", "path", path, "err", err)
		return nil
	}
	key := keyOf(fi)
	if d, ok := t.done[key]; t.openFile(key) != nil || ok && d.size == fi.Size() && d.mtime.Equal(fi.ModTime()) {
		f.Close()
		return nil
	}
	fl := &file{f: f, key: key, gz: isGzip(path), stream: stream, sibling: sibling, state: waiting, lastGrow: t.now(),
		lineReader: lineReader{path: path, split: splitter{max: t.cfg.MaxLine}, size: followReadSize, pattern: pattern}}
	err = t.identify(fl)
	if fl.state.closed() {
		t.finish(fl)
	} else {
		t.files = append(t.files, fl)
	}
	return err
}
