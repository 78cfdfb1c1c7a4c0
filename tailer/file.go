package tailer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// file is one file being followed. Its lineReader holds its identity ("" until
// its first line is complete) and how far it was read.
type file struct {
	lineReader
	f   *os.File
	key fileKey
	gz  bool
	// stream is the plain path this file is the log or a rotated copy of;
	// "" for a file a glob matched.
	stream   string
	sibling  bool // matched only as a possible rotated copy of stream
	passed   bool // a rotated copy never read and older than the stream
	state    fileState
	lastGrow time.Time
	// tail holds the last bytes read before split.off (up to tailSize):
	// each poll checks they are still there, which tells a file truncated
	// and written again past the offset from one that grew.
	tail []byte
	// rewritten is set when the file was truncated and written again: its
	// content is new, and is read from its start whatever the position of
	// its identity says.
	rewritten bool
	// truncated says when the file was last found truncated, and how far
	// it had been read, for Files.
	truncated    time.Time
	truncatedOff int64
}

// fileState is where a file is in its life, from being opened to being
// closed.
type fileState uint8

const (
	// waiting: the file has no complete first line yet, so no identity,
	// and nothing is read.
	waiting fileState = iota
	// following: the file is read as it grows; its path still names it.
	following
	// rotated: its path names another file, or none. The file is read
	// (identified first, if its first line came late) until it has not
	// grown for the idle grace, or until it is removed.
	rotated
	// finished: the file was read to its end, or is not to be read (a
	// rotated copy never read before, an unreadable file). It is closed, and
	// opened again only once its size or modification time changes.
	finished
	// duplicate: another name of a file already open. It is closed, and
	// looked at again on the next re-scan, for the other may be truncated
	// by then (copytruncate).
	duplicate
)

var stateNames = [...]string{waiting: "waiting", following: "following", rotated: "rotated",
	finished: "finished", duplicate: "duplicate"}

func (s fileState) String() string { return stateNames[s] }

// closed reports whether a file in state s is done with.
func (s fileState) closed() bool { return s >= finished }

// fileKey is a file as the file system knows it (device and inode), so
// that a file met again under another name is known.
type fileKey struct{ dev, ino uint64 }

// keyOf returns the key of the file fi describes.
func keyOf(fi os.FileInfo) fileKey {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileKey{uint64(st.Dev), uint64(st.Ino)}
	}
	return fileKey{}
}

// doneState is what is kept of a finished file: a re-scan opens it again
// only if its size or modification time changed.
type doneState struct {
	size  int64
	mtime time.Time
	// passed: a rotated copy never read, passed over as older than the
	// stream; looked at again if the stream turns out to be older.
	passed bool
}

// tailSize is how many bytes before the read offset are checked on every
// poll: more than a line's timestamp and client address, so that content
// written again is not taken for what was read unless that line is
// identical, at the same offset.
const tailSize = 128

// remember keeps the last bytes of c, which end at its offset, for the
// next poll to check. A skipped line's bytes are not kept, so after one the
// check covers only the lines after it.
func (fl *file) remember(c Chunk) {
	d := c.Data
	if c.Skipped > 0 || len(d) >= tailSize {
		fl.tail = append(fl.tail[:0], d[len(d)-min(len(d), tailSize):]...)
		return
	}
	fl.tail = append(fl.tail, d...)
	if n := len(fl.tail) - tailSize; n > 0 {
		fl.tail = append(fl.tail[:0], fl.tail[n:]...)
	}
}

// finish closes fl and, unless it is a duplicate, remembers it as read.
func (t *Tailer) finish(fl *file) {
	if fi, err := fl.f.Stat(); err == nil && fl.state != duplicate {
		t.done[fl.key] = doneState{fi.Size(), fi.ModTime(), fl.passed}
	}
	fl.f.Close()
}

// poll reads what is new in fl and moves it on to its next state.
func (t *Tailer) poll(ctx context.Context, fl *file, send func(Chunk) error) error {
	if fl.gz {
		fl.state = finished // it does not grow: read once
		return t.readGzip(ctx, fl, send)
	}
	fi, err := fl.f.Stat()
	if err != nil {
		t.log.Warn("stat", "path", fl.path, "err", err)
		fl.state = finished
		return nil
	}
	if fl.id != "" {
		t.restartIfTruncated(fl, fi.Size())
	}
	if fl.id == "" {
		if err := t.identify(fl); err != nil || fl.state.closed() {
			return err
		}
	}
	if fl.id != "" && fi.Size() > fl.split.consumed() {
		n, err := t.read(ctx, fl, fl.f, send)
		if err != nil {
			return err
		}
		if n > 0 {
			fl.lastGrow = t.now()
		}
	}
	return t.retire(ctx, fl, fi, send)
}

// restartIfTruncated makes fl, if it now holds other content than what was
// read, a file to identify and read again from its start.
func (t *Tailer) restartIfTruncated(fl *file, size int64) {
	how := t.truncated(fl, size)
	if how == "" {
		return
	}
	t.warn(fl.path, "truncated", "file truncated; reading it again from its start", "path", fl.path,
		"read", fl.split.off, "size", size, "how", how,
		"fix", "if this is logrotate's copytruncate, prefer rotation by rename with a reopen: lines written between its copy and its truncation are lost")
	fl.truncated, fl.truncatedOff = t.now(), fl.split.off
	fl.id, fl.split, fl.tail, fl.rewritten = "", splitter{max: t.cfg.MaxLine}, fl.tail[:0], true
	if fl.state == following {
		fl.state = waiting
	}
}

// retire marks fl rotated once its path no longer names it, and finishes it
// once it is removed, or rotated and idle for the grace, after reading what
// is left in it.
func (t *Tailer) retire(ctx context.Context, fl *file, fi os.FileInfo, send func(Chunk) error) error {
	if fl.state != rotated {
		if pi, err := os.Stat(fl.path); err != nil || !os.SameFile(fi, pi) {
			fl.state = rotated
		}
	}
	removed := false
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		removed = true
	}
	if !removed && (fl.state != rotated || t.now().Sub(fl.lastGrow) < t.cfg.IdleGrace) {
		return nil
	}
	// Rotated away for good: its last line is as complete as it gets.
	if fl.id != "" {
		if _, err := t.read(ctx, fl, fl.f, send); err != nil {
			return err
		}
		if err := fl.flush(send); err != nil {
			return err
		}
	}
	fl.state = finished
	return nil
}

// truncated says how fl now holds other content than what was read, or ""
// if it does not: it is shorter than what was read; or it was truncated and
// written again up to or past the offset between two polls, so that its
// first line changed, or the bytes just before the offset did. Only content
// written again with the same first line and the same tailSize bytes before
// the offset goes unseen. The checks cost two small preads a poll.
func (t *Tailer) truncated(fl *file, size int64) string {
	if size < fl.split.consumed() {
		return "smaller than what was read"
	}
	id, err := readID(fl.f, false)
	if err == nil && id != fl.id || errors.Is(err, ErrNoFingerprint) {
		return "its first line changed"
	}
	if n := int64(len(fl.tail)); n > 0 {
		var buf [tailSize]byte
		if _, err := fl.f.ReadAt(buf[:n], fl.split.off-n); err != nil || !bytes.Equal(buf[:n], fl.tail) {
			return "the lines before the read offset changed"
		}
	}
	return ""
}

// read reads src, which is fl's content, to its end and sends its complete
// lines. It returns how many bytes it read, and an error only if ctx is
// done: a file that cannot be read is logged, and looked at again on the
// next poll.
func (t *Tailer) read(ctx context.Context, fl *file, src io.Reader, send func(Chunk) error) (int64, error) {
	n, err := fl.readFrom(src, func(c Chunk) error {
		fl.remember(c)
		return send(c)
	})
	if ctx.Err() != nil {
		return n, ctx.Err()
	}
	if err != nil {
		t.log.Warn("read", "path", fl.path, "err", err)
	}
	return n, nil
}

// readGzip reads a compressed file from its position to its end. It does
// not grow, so it is read once.
func (t *Tailer) readGzip(ctx context.Context, fl *file, send func(Chunk) error) error {
	src, err := content(fl.f, fl.f, true, fl.split.off)
	if err != nil {
		t.log.Warn("gzip", "path", fl.path, "position", fl.split.off, "err", err)
		return nil
	}
	if _, err := t.read(ctx, fl, src, send); err != nil {
		return err
	}
	return fl.flush(send)
}
