package tailer

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// fingerprintSize is how many first bytes identify a file whose first line is
// longer than that.
const fingerprintSize = 1024

// ID returns the identity under which a file's read position is kept: a
// fingerprint of its first line (of its decompressed content for .gz). It
// returns ErrNoFingerprint while the file has no complete first line, and a
// *NotRegularError for a path that is not a regular file.
func ID(path string) (string, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readID(f, isGzip(path))
}

// readID reads the fingerprint of an open file from its start.
func readID(f *os.File, gz bool) (string, error) {
	var head [fingerprintSize]byte
	var n int
	var err error
	if gz {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(io.NewSectionReader(f, 0, 1<<62)); err != nil {
			if errors.Is(err, io.EOF) {
				return "", ErrNoFingerprint // empty file
			}
			return "", fmt.Errorf("fingerprint %s: %w", f.Name(), err)
		}
		n, err = io.ReadFull(zr, head[:])
	} else {
		n, err = f.ReadAt(head[:], 0)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fmt.Errorf("fingerprint %s: %w", f.Name(), err)
	}
	id := fingerprint(head[:n])
	if id == "" {
		return "", ErrNoFingerprint
	}
	return id, nil
}

// fingerprint returns the identity of a file that starts with head, or ""
// if head holds neither a newline nor fingerprintSize bytes. The first line
// of an access log holds a timestamp to the second and a client address, so
// two different logs do not share it; it never changes once written, so a
// file keeps its identity through renames, compression and growth.
func fingerprint(head []byte) string {
	n := bytes.IndexByte(head, '\n') + 1
	if n == 0 {
		if len(head) < fingerprintSize {
			return ""
		}
		n = fingerprintSize
	}
	sum := sha256.Sum256(head[:n])
	return "fp:" + hex.EncodeToString(sum[:12])
}

func isGzip(path string) bool { return strings.HasSuffix(path, ".gz") }

// identify gives fl its identity and start offset once its first line is
// complete, and moves a waiting file on to following (or rotated, for a
// rotated copy). It finishes fl if it is a rotated copy never read before
// that does not belong to the stream (see unread), and marks it a duplicate
// if it is another name of a file already open.
func (t *Tailer) identify(fl *file) error {
	id := t.fingerprintOf(fl)
	if id == "" {
		return nil
	}
	start, err := t.startOf(fl, id)
	if err != nil || fl.state.closed() {
		return err
	}
	if !t.resumeAt(fl, id, start) {
		return nil
	}
	if fl.state == waiting {
		fl.state = following
		if fl.sibling {
			fl.state = rotated // read until idle, as a file renamed while open
		}
	}
	t.log.Debug("following", "path", fl.path, "id", id, "offset", fl.split.off)
	return nil
}

// fingerprintOf returns fl's identity, or "" if it has none to be read by
// yet: it has no first line (a rotated copy or a .gz, which will not grow
// one, is finished), it cannot be read (finished), or it is another name
// of a file already open (a duplicate).
func (t *Tailer) fingerprintOf(fl *file) string {
	id, err := readID(fl.f, fl.gz)
	if errors.Is(err, ErrNoFingerprint) {
		if fl.sibling || fl.gz {
			fl.state = finished // a copy or a .gz does not grow a first line
		}
		return ""
	}
	if err != nil {
		t.log.Warn("fingerprint", "path", fl.path, "err", err)
		fl.state = finished
		return ""
	}
	for _, o := range t.files {
		if o != fl && o.id == id {
			fl.state = duplicate // the same file under two names: read it once
			return ""
		}
	}
	return id
}

// startOf returns the offset to read fl, known as id, from. It finishes
// fl if it is a rotated copy never read that is not part of its stream
// (see unread); otherwise a file of a stream moves the stream's start
// (see belongs), before any of its lines is read.
func (t *Tailer) startOf(fl *file, id string) (int64, error) {
	start, known, err := t.offsets.start(id)
	if err != nil {
		fl.state = finished
		return 0, fmt.Errorf("position of %s: %w", fl.path, err)
	}
	if fl.rewritten {
		// The same first line, other content: the position is the old
		// content's.
		start, fl.rewritten = 0, false
	}
	if fl.sibling && !known {
		if !t.unread(fl) {
			fl.state, fl.passed = finished, true
			return 0, nil
		}
		t.log.Info("reading a rotated file that was never read", "path", fl.path, "id", id,
			"why", "it was rotated away before logtally could open it (two rotations in a row, or while logtally was stopped)")
	}
	if fl.stream != "" && (known || !fl.sibling) {
		t.belongs(fl)
	}
	return start, nil
}

// resumeAt sets fl, known as id, to be read from start (from 0 if the
// file is now shorter than that), and keeps the bytes before start for
// truncated to check. It reports false, and finishes fl, if fl cannot
// seek there.
func (t *Tailer) resumeAt(fl *file, id string, start int64) bool {
	if !fl.gz {
		if fi, err := fl.f.Stat(); err == nil && fi.Size() < start {
			// Known, yet shorter than what was read of it: the content is
			// new (a truncated file written again from the same first line).
			t.log.Warn("file shorter than its position; reading from the start",
				"path", fl.path, "size", fi.Size(), "position", start)
			start = 0
		}
		if _, err := fl.f.Seek(start, io.SeekStart); err != nil {
			t.log.Warn("seek", "path", fl.path, "err", err)
			fl.state = finished
			return false
		}
	}
	fl.id, fl.split = id, splitter{max: t.cfg.MaxLine, off: start}
	fl.tail = fl.tail[:0]
	if !fl.gz && start > 0 {
		// What is before the position now is taken for what was read: a
		// file rewritten while logtally was stopped cannot be told apart.
		n := min(start, tailSize)
		fl.tail = slices.Grow(fl.tail, int(n))[:n]
		if _, err := fl.f.ReadAt(fl.tail, start-n); err != nil {
			fl.tail = fl.tail[:0]
		}
	}
	return true
}
