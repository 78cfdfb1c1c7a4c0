package tailer

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Reader reads whole files once, for replay. Its counters may be read from
// any goroutine while it reads, to show progress.
type Reader struct {
	MaxLine int // longest line kept; DefaultMaxLine if zero
	BufSize int // size of each chunk's buffer; ChunkSize if zero

	// Bytes counts the bytes read from disk (compressed bytes for .gz),
	// including those skipped to reach the start offset.
	Bytes atomic.Int64
}

// Read reads path from offset to its end and sends its complete lines in
// chunks tagged with id. For a plain file a final line without a newline is
// not sent: the file may still be written. A .gz file is complete, so its
// last line is sent even without one. Files ending in .gz are decompressed,
// and offset counts decompressed bytes.
func (r *Reader) Read(ctx context.Context, path, id string, offset int64, out chan<- Chunk) (end int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return offset, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	size := r.BufSize
	if size <= 0 {
		size = ChunkSize
	}
	s := splitter{max: r.MaxLine, off: offset}
	if s.max <= 0 {
		s.max = DefaultMaxLine
	}
	var src io.Reader = &counter{r: f, n: &r.Bytes}
	gz := isGzip(path)
	if gz {
		zr, err := gzip.NewReader(bufio.NewReaderSize(src, 256<<10))
		if err != nil {
			return offset, fmt.Errorf("read %s: %w", path, err)
		}
		defer zr.Close()
		if _, err := io.CopyN(io.Discard, zr, offset); err != nil {
			return offset, fmt.Errorf("read %s: skip to %d: %w", path, offset, err)
		}
		src = zr
	} else if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return offset, fmt.Errorf("read %s: %w", path, err)
		}
		r.Bytes.Add(offset)
	}
	send := func(data []byte, skipped int) error {
		if len(data) == 0 && skipped == 0 {
			return nil
		}
		select {
		case out <- Chunk{File: id, Path: path, Data: data, Offset: s.off, Skipped: skipped}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		// Each chunk gets its own buffer: the consumer keeps it until the
		// lines are applied. The incomplete line is carried to the next one.
		buf := make([]byte, len(s.carry), len(s.carry)+size)
		copy(buf, s.carry)
		n, err := io.ReadFull(src, buf[len(buf):cap(buf)])
		lines, skipped := s.cut(buf[:len(buf)+n])
		if err := send(lines, skipped); err != nil {
			return s.off, err
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if gz {
				line, skipped := s.flush()
				return s.off, send(line, skipped)
			}
			return s.off, nil
		}
		if err != nil {
			return s.off, fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n *atomic.Int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
