package tailer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"sync/atomic"
)

// A replayed plain file is mapped into memory rather than read into
// buffers: its chunks are windows of the mapping, and the kernel copies
// nothing (a copy that cost a replay about 5% of its CPU). A mapped file
// that shrinks while it is replayed (truncated by another program) makes
// any read of its lost pages fault, where read would have come to an early
// end: a goroutine that reads mapped chunks does it in ReadMapped, which
// asks the runtime to turn the fault into a panic (debug.SetPanicOnFault)
// and turns that into ErrTruncated, so that the replay stops with an error and
// commits nothing past what it had counted whole. Lines appended while it
// is replayed are left to the next replay or run: a replay maps what the
// file holds when it starts reading it.

// ErrTruncated is the error of a replay whose mapped file shrank under
// it: the lines counted before it are committed, and a replay run again
// goes on from there.
var ErrTruncated = errors.New("file shrank while it was replayed; what was counted before it is kept: replay again to go on from there")

// ReadMapped runs f, which reads chunks that may be mapped, so that a read
// of a mapped file's lost pages makes it return ErrTruncated rather than
// crash the program. A goroutine runs what reads a chunk's data in it: a
// replay's parsers, and what applies their results.
func ReadMapped(f func()) (err error) {
	defer recoverTruncated(&err)
	defer faultsPanic()()
	f()
	return nil
}

// recoverTruncated is deferred by a goroutine that reads mapped chunks with
// debug.SetPanicOnFault on: it turns the fault of a read of a mapped file's
// lost pages into ErrTruncated, in *err. Any other panic goes on.
func recoverTruncated(err *error) {
	p := recover()
	if p == nil {
		return
	}
	if re, ok := p.(runtime.Error); ok {
		// A fault's error tells its address, which says nothing to the
		// operator: the path, which the caller adds, does.
		if _, fault := re.(interface{ Addr() uintptr }); fault {
			*err = ErrTruncated
			return
		}
	}
	panic(p)
}

// mapping is a mapped file, unmapped once the reader and every chunk cut
// from it are done with it (refs).
type mapping struct {
	data []byte
	refs atomic.Int64
}

// release drops a reference, and unmaps the file after the last.
func (m *mapping) release() {
	if m.refs.Add(-1) == 0 {
		unmap(m.data)
	}
}

// readMapped sends the complete lines of f from offset on, as read does,
// in chunks of windows of lr.size bytes of the file mapped. ok is false
// when f could not be mapped (a file system that maps nothing): the caller
// reads it instead.
func (r *Reader) readMapped(ctx context.Context, f *os.File, lr *lineReader, send func(Chunk) error) (ok bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return false, nil
	}
	size := fi.Size()
	if lr.split.off >= size {
		r.Bytes.Add(lr.split.off)
		return true, nil // nothing new: a file shorter than offset holds nothing from there on
	}
	data, err := mapFile(f, size)
	if err != nil {
		return false, nil
	}
	m := &mapping{data: data}
	m.refs.Store(1)
	defer m.release()
	r.Bytes.Add(lr.split.off)
	// From here on a fault is the file's having shrunk: it is not read
	// again, unmapped.
	var sendErr error
	if err := ReadMapped(func() { sendErr = lr.sendWindows(ctx, m, send, &r.Bytes) }); err != nil {
		return true, err
	}
	return true, sendErr
}

// sendWindows cuts m from lr.split.off on into chunks of complete lines, at
// most lr.size plus the longest line's bytes each, but for a line longer
// than that, which is skipped (counted as a long line, Chunk.Skipped) a
// window at a time. A
// last line without its newline is not sent: the file may still be
// written. It counts what it has looked at in read, and stops when ctx is
// done, even in a line of gigabytes.
func (lr *lineReader) sendWindows(ctx context.Context, m *mapping, send func(Chunk) error, read *atomic.Int64) error {
	s := &lr.split
	size := int64(len(m.data))
	// A window holds any line of up to max bytes that starts it, as a
	// buffer with the line carried into it does.
	win := int64(lr.size + s.max)
	pos := s.off // where the next window starts: past s.off inside a long line
	for pos < size {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(pos+win, size)
		window := m.data[pos:end]
		if pos > s.off { // inside a line longer than a window, which began at s.off
			i := bytes.IndexByte(window, '\n')
			if i < 0 {
				read.Add(end - pos)
				pos = end
				continue
			}
			read.Add(int64(i) + 1)
			pos += int64(i) + 1
			s.off = pos
			if err := send(Chunk{File: lr.id, Path: lr.path, Offset: s.off, Skipped: 1, Pattern: lr.pattern}); err != nil {
				return err
			}
			continue
		}
		cut := int64(bytes.LastIndexByte(window, '\n') + 1)
		if cut == 0 { // a line longer than a window begins here, or the last one is not whole yet
			read.Add(end - pos)
			pos = end
			continue
		}
		m.refs.Add(1)
		c := Chunk{File: lr.id, Path: lr.path, Data: window[:cut:cut], Offset: pos + cut, Pattern: lr.pattern, mapped: m}
		if err := send(c); err != nil {
			m.release()
			return err
		}
		read.Add(cut)
		s.off += cut
		pos = s.off
	}
	return nil
}
