package tailer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// mapping is a segment of a file mapped, a few windows long: the chunks
// cut from it and the reader while it cuts them hold it (refs), and the
// last to let go unmaps it. So a replay holds in memory the segments of
// the chunks on their way, whatever the file's size, and unmaps (which
// stops every core to flush its address cache) once a few windows. One
// never let go is unmapped when it is collected.
type mapping struct {
	data    []byte
	refs    atomic.Int64
	cleanup runtime.Cleanup
}

func newMapping(data []byte) *mapping {
	m := &mapping{data: data}
	m.refs.Store(1) // the reader's
	m.cleanup = runtime.AddCleanup(m, unmap, data)
	return m
}

// release lets go of a reference, and unmaps the segment after the last.
func (m *mapping) release() {
	if m.refs.Add(-1) == 0 {
		m.cleanup.Stop()
		unmap(m.data)
	}
}

// segmentWindows is how many windows a segment holds.
const segmentWindows = 16

// readMapped sends the complete lines of f from offset on, as read does,
// in chunks cut from windows of the file mapped a segment at a time. ok
// is false when f could not be mapped (a file system that maps nothing):
// the caller reads it instead.
func (r *Reader) readMapped(ctx context.Context, f *os.File, lr *lineReader, send func(Chunk) error) (ok bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return false, nil
	}
	w := windows{f: f, size: fi.Size(), len: int64(lr.size + lr.split.max)}
	var first window
	if lr.split.off < w.size { // else nothing new: a file shorter than offset holds nothing from there on
		if first, err = w.at(lr.split.off); err != nil {
			return false, nil
		}
		defer w.release()
	}
	r.Bytes.Add(lr.split.off)
	if first.m == nil {
		return true, nil
	}
	// From here on a fault is the file's having shrunk: it is not read
	// again, unmapped.
	var sendErr error
	if err := ReadMapped(func() { sendErr = lr.sendWindows(ctx, &w, first, send, &r.Bytes) }); err != nil {
		return true, err
	}
	return true, sendErr
}

// windows maps a file's windows: len bytes from a line's start (a line of
// up to the longest kept fits in one, as in a buffer with the line carried
// into it), in segments of segmentWindows of them.
type windows struct {
	f    *os.File
	size int64
	len  int64
	seg  *mapping // the segment being cut, nil before the first
	base int64    // its offset in the file
}

// window is a window of a segment: the file's bytes from pos on.
type window struct {
	pos  int64
	data []byte
	m    *mapping
}

// at returns the window from pos, in the segment being cut if it holds
// it, else in a new one.
func (w *windows) at(pos int64) (window, error) {
	end := min(pos+w.len, w.size)
	if w.seg == nil || pos < w.base || end > w.base+int64(len(w.seg.data)) {
		base := pos &^ int64(pageSize-1)
		data, err := mapFile(w.f, base, min(max(base+segmentWindows*w.len, end), w.size)-base)
		if err != nil {
			return window{}, err
		}
		w.release()
		w.seg, w.base = newMapping(data), base
	}
	return window{pos: pos, data: w.seg.data[pos-w.base : end-w.base], m: w.seg}, nil
}

// release lets go of the segment being cut.
func (w *windows) release() {
	if w.seg != nil {
		w.seg.release()
		w.seg = nil
	}
}

// sendWindows cuts the file from lr.split.off on, starting with window
// first, into chunks of complete lines, each in a window of its own, but
// for a line longer than a window, which is skipped (counted as a long
// line, Chunk.Skipped) a window at a time. A last line without its
// newline is not sent: the file may still be written. It counts what it
// has looked at in read, and stops when ctx is done, even in a line of
// gigabytes.
func (lr *lineReader) sendWindows(ctx context.Context, w *windows, first window, send func(Chunk) error,
	read *atomic.Int64) error {
	s := &lr.split
	win := first
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		if win.pos > s.off { // inside a line longer than a window, which began at s.off
			err = lr.skipLong(win, send, read)
		} else {
			err = lr.sendLines(win, send, read)
		}
		if err != nil {
			return err
		}
		next := win.pos + int64(len(win.data)) // on in a line longer than a window
		if s.off > win.pos {
			next = s.off // after the lines sent, or the long line's end
		}
		if next >= w.size {
			return nil
		}
		if win, err = w.at(next); err != nil {
			return fmt.Errorf("map: %w", err)
		}
	}
}

// sendLines sends win's complete lines as a chunk, which holds its
// segment until it is released; a window of none (a line longer than a
// window begins it, or the last line is not whole yet) sends nothing.
func (lr *lineReader) sendLines(win window, send func(Chunk) error, read *atomic.Int64) error {
	s := &lr.split
	cut := int64(bytes.LastIndexByte(win.data, '\n') + 1)
	if cut == 0 {
		read.Add(int64(len(win.data)))
		return nil
	}
	win.m.refs.Add(1)
	c := Chunk{File: lr.id, Path: lr.path, Data: win.data[:cut:cut], Offset: win.pos + cut, Pattern: lr.pattern,
		mapped: win.m}
	if err := send(c); err != nil {
		win.m.release()
		return err
	}
	read.Add(cut)
	s.off += cut
	return nil
}

// skipLong looks for the end of the long line that win is inside, and
// counts it skipped once it is found.
func (lr *lineReader) skipLong(win window, send func(Chunk) error, read *atomic.Int64) error {
	s := &lr.split
	i := bytes.IndexByte(win.data, '\n')
	if i < 0 {
		read.Add(int64(len(win.data)))
		return nil
	}
	read.Add(int64(i) + 1)
	s.off = win.pos + int64(i) + 1
	return send(Chunk{File: lr.id, Path: lr.path, Offset: s.off, Skipped: 1, Pattern: lr.pattern})
}
