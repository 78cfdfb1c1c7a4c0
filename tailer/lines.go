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
		buf := make([]byte, len(s.carry), len(s.carry)+r.size)
		copy(buf, s.carry)
		n, err := io.ReadFull(src, buf[len(buf):cap(buf)])
		total += int64(n)
		if n > 0 {
			lines, skipped := s.cut(buf[:len(buf)+n])
			if err := r.send(send, lines, skipped); err != nil {
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

// flush sends the incomplete last line as a complete one, for a file that
// will not grow any more.
func (r *lineReader) flush(send func(Chunk) error) error {
	line, skipped := r.split.flush()
	return r.send(send, line, skipped)
}

func (r *lineReader) send(send func(Chunk) error, data []byte, skipped int) error {
	if len(data) == 0 && skipped == 0 {
		return nil
	}
	return send(Chunk{File: r.id, Path: r.path, Data: data, Offset: r.split.off, Skipped: skipped, Pattern: r.pattern})
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
