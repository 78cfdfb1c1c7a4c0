package tailer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// lineReader cuts what is read from one file into chunks of complete lines.
// Following and replay both read through it, plain files and .gz alike: it
// is the one place where lines are cut, long lines skipped and offsets kept.
type lineReader struct {
	id    string // file identity, as returned by ID
	path  string
	split splitter
	size  int // the most bytes read for one chunk
	// pattern is the index of what matched the file: Chunk.Pattern.
	pattern int
	// free holds buffers released by the chunks' consumer (Chunk.Release)
	// to read into again; nil: every chunk gets a new one.
	free chan []byte
	// carry holds the incomplete last line of a chunk, which the next one
	// starts with: not in the chunk's buffer, which may be released first.
	carry []byte
}

// readFrom reads src to its end and hands each run of complete lines to
// send. It returns how many bytes it read. An error is send's, or one from
// src other than its end.
func (r *lineReader) readFrom(src io.Reader, send func(Chunk) error) (int64, error) {
	var total int64
	for {
		// Each chunk gets its own buffer: the consumer keeps it until the
		// lines are applied. The incomplete line is carried to the next one.
		s := &r.split
		buf := r.buffer(len(s.carry) + r.size)
		buf = append(buf, s.carry...)
		n, err := io.ReadFull(src, buf[len(buf):len(s.carry)+r.size])
		total += int64(n)
		if n > 0 {
			lines, skipped := s.cut(buf[:len(buf)+n])
			r.carry = append(r.carry[:0], s.carry...)
			s.carry = r.carry
			if err := r.send(send, buf, lines, skipped); err != nil {
				return total, err
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("read %s: %w", r.path, err)
		}
	}
}

// buffer returns an empty buffer of at least size bytes: a released one,
// or a new one. A new one holds the longest line carried besides a chunk,
// so that any can be read into again.
func (r *lineReader) buffer(size int) []byte {
	select {
	case buf := <-r.free:
		if cap(buf) >= size {
			return buf
		}
	default:
	}
	return make([]byte, 0, max(size, r.size+r.split.max))
}

// flush sends the incomplete last line as a complete one, for a file that
// will not grow any more.
func (r *lineReader) flush(send func(Chunk) error) error {
	line, skipped := r.split.flush()
	return r.send(send, nil, line, skipped)
}

// send sends data, which lies in buf (nil: in no buffer of r's), as a
// chunk. A chunk that holds nothing releases buf at once.
func (r *lineReader) send(send func(Chunk) error, buf, data []byte, skipped int) error {
	c := Chunk{File: r.id, Path: r.path, Data: data, Offset: r.split.off, Skipped: skipped, Pattern: r.pattern, buf: buf}
	if buf != nil {
		c.free = r.free
	}
	if len(data) == 0 && skipped == 0 {
		c.Release()
		return nil
	}
	return send(c)
}

// splitter cuts what is read from a file into complete lines, and keeps the
// offset just after the last complete line. A line longer than max is
// dropped as it streams past, so it is never buffered whole, and counted
// once its newline arrives.
type splitter struct {
	max      int
	off      int64 // offset just after the last complete or skipped line
	carry    []byte
	skipping bool  // inside a line longer than max
	dropped  int64 // bytes of that line dropped so far
}

// cut takes buf, which is s.carry followed by newly read bytes, and returns
// the complete lines in it and how many long lines ended in it. What follows
// the last newline is kept in s.carry, aliasing buf.
func (s *splitter) cut(buf []byte) (lines []byte, skipped int) {
	if s.skipping {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			s.dropped += int64(len(buf))
			s.carry = nil
			return nil, 0
		}
		s.off += s.dropped + int64(i) + 1
		s.skipping, s.dropped, skipped = false, 0, 1
		buf = buf[i+1:]
	}
	end := bytes.LastIndexByte(buf, '\n') + 1
	lines, s.carry = buf[:end:end], buf[end:]
	s.off += int64(end)
	if len(s.carry) > s.max {
		s.skipping, s.dropped, s.carry = true, int64(len(s.carry)), nil
	}
	return lines, skipped
}

// consumed returns how many bytes of the file the splitter has taken in:
// those up to off, and those of the line not complete yet.
func (s *splitter) consumed() int64 { return s.off + s.dropped + int64(len(s.carry)) }

// flush returns the incomplete last line as a complete one, for a file that
// will not grow any more, and how many long lines that ends.
func (s *splitter) flush() (line []byte, skipped int) {
	switch {
	case s.skipping:
		s.off += s.dropped
		s.skipping, s.dropped = false, 0
		return nil, 1
	case len(s.carry) > 0:
		line = append(append([]byte(nil), s.carry...), '\n')
		s.off += int64(len(s.carry))
		s.carry = nil
	}
	return line, 0
}
