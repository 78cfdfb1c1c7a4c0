package tailer

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Streams keeps, for each plain path followed, the modification time of
// the oldest file of its stream that logtally started to read: where the
// stream starts, for the next run to tell a file rotated away unread
// (newer) from an archive (older). The database that keeps the positions
// keeps it too (*storage.Store).
type Streams interface {
	StreamSince(path string) (since time.Time, ok bool, err error)
	SetStreamSince(path string, since time.Time) error
}

// streams holds, for each plain path followed, the modification time of
// the oldest file of its stream (the file at the path, or a rotated copy)
// known to have been read: a rotated copy never read that is not older than
// that was rotated away before logtally could open it. It is loaded from
// the store at Run's start and stored there whenever it moves back, before
// the file that moved it is read.
type streams struct {
	since map[string]time.Time
	store Streams // nil: known for this run only
}

func newStreams(store Streams) streams {
	return streams{since: make(map[string]time.Time), store: store}
}

// load loads, for each plain path among patterns, where its stream starts
// as the store kept it.
func (s *streams) load(patterns []string) error {
	if s.store == nil {
		return nil
	}
	for _, p := range patterns {
		if hasMeta(p) {
			continue
		}
		since, ok, err := s.store.StreamSince(p)
		if err != nil {
			return fmt.Errorf("start of the stream of %s: %w", p, err)
		}
		if cur, known := s.since[p]; ok && (!known || since.Before(cur)) {
			s.since[p] = since
		}
	}
	return nil
}

// extend moves the start of stream back to mtime, and stores it, if mtime
// is older than what is known of it. It reports whether it moved; an
// error is the store's, and leaves it moved for this run.
func (s *streams) extend(stream string, mtime time.Time) (moved bool, err error) {
	if since, ok := s.since[stream]; ok && !mtime.Before(since) {
		return false, nil
	}
	s.since[stream] = mtime
	if s.store != nil {
		err = s.store.SetStreamSince(stream, mtime)
	}
	return true, err
}

// unread reports whether fl, a rotated copy of its stream never read, is
// part of the stream that was rotated away before it could be read: it is
// named as logrotate names rotated copies, and it is not older than the
// oldest file of the stream known to have been read. An older one is an
// archive from before logtally followed the path, and is left alone.
//
// Modification times order the files of a stream: a rename keeps them, and
// so do logrotate's and gzip's compression. A rotated file stopped growing
// before its successor got its first line, so a file rotated away unread is
// no older than the last file read before it, which is no older than the
// oldest.
func (t *Tailer) unread(fl *file) bool {
	since, ok := t.streams.since[fl.stream]
	if !ok || !rotatedName(fl.stream, fl.path) {
		return false
	}
	fi, err := fl.f.Stat()
	return err == nil && !fi.ModTime().Before(since)
}

// belongs records that fl, a file of its stream known to be read, is part of
// it: the stream is at least as old as fl. Copies passed over as older than
// the stream are looked at again if that makes it older.
func (t *Tailer) belongs(fl *file) {
	fi, err := fl.f.Stat()
	if err != nil {
		return
	}
	// Before any line of fl is sent: a line counted is always of a stream
	// whose start a restart knows.
	moved, err := t.streams.extend(fl.stream, fi.ModTime())
	if err != nil {
		t.log.Warn("cannot store where the log's stream starts", "path", fl.stream, "err", err,
			"risk", "if logtally stops before its next commit and the log is rotated meanwhile, the next run takes the rotated files for archives and does not read them")
	}
	if !moved {
		return
	}
	for k, d := range t.done {
		if d.passed {
			delete(t.done, k)
		}
	}
}

// rotatedName reports whether name is path as logrotate and the common
// distributions name its rotated copies: a number (access.log.1, Debian's
// default), or a date (access.log-20261121, Red Hat's dateext; or
// access.log.2026-11-21), each possibly compressed (.gz). Other names, such
// as access.log.old or a .bz2, are read only if known by fingerprint.
func rotatedName(path, name string) bool {
	suffix, ok := strings.CutPrefix(name, path)
	if !ok {
		return false
	}
	suffix = strings.TrimSuffix(suffix, ".gz")
	if len(suffix) < 2 || (suffix[0] != '.' && suffix[0] != '-') || suffix[1] < '0' || suffix[1] > '9' {
		return false
	}
	return strings.Trim(suffix[1:], "0123456789-_.") == ""
}

// olderName orders two names whose files have the same modification time,
// older first: a rotated copy (access.log.1) before the name it extends,
// and a higher number (access.log.2) before a lower one.
func olderName(a, b string) int {
	switch {
	case strings.HasPrefix(a, b):
		return -1
	case strings.HasPrefix(b, a):
		return 1
	}
	na, oka := rotationNumber(a)
	nb, okb := rotationNumber(b)
	if oka && okb && na.base == nb.base {
		return nb.n - na.n
	}
	return 0
}

type numbered struct {
	base string
	n    int
}

// rotationNumber splits access.log.2 (or access.log.2.gz) into access.log and
// 2. A long number is a date or a time (access.log.20261121), not a count.
func rotationNumber(name string) (numbered, bool) {
	name = strings.TrimSuffix(name, ".gz")
	i := strings.LastIndexByte(name, '.')
	if i < 0 || len(name)-i-1 > 6 {
		return numbered{}, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 {
		return numbered{}, false
	}
	return numbered{name[:i], n}, true
}

// Claim records, for each plain path among patterns whose stream has no
// start yet, the modification time of the file at it now: the stream
// logtally has undertaken to follow starts there, although it may open the
// file only later (a first start in fleet mode waits for the fleet
// database). So a file rotated away meanwhile is read as the stream's when
// reading begins, in this run or the next, rather than left as an archive.
// A path with no file yet is not claimed: its first file is opened as soon
// as it appears.
func Claim(patterns []string, store Streams) error {
	s := newStreams(store)
	if err := s.load(patterns); err != nil {
		return err
	}
	for _, p := range patterns {
		if _, known := s.since[p]; known || hasMeta(p) {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue // opened, and its trouble told, when followed
		}
		if _, err := s.extend(p, fi.ModTime()); err != nil {
			return fmt.Errorf("claim %s: %w", p, err)
		}
	}
	return nil
}
