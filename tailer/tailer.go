// Package tailer reads access logs and hands out their complete lines in
// chunks, each tagged with the file it came from and the byte offset just
// after it.
//
// The offset is what makes the log a durable queue: a consumer commits the
// offset together with what it derived from the chunk, and hands that offset
// back to resume. Lines are delivered in chunks, not one at a time, so that a
// channel operation and an allocation are paid per chunk rather than per line.
package tailer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/nxadm/tail"
)

// ChunkSize is the size of the buffers replay reads with.
const ChunkSize = 256 << 10

// Chunk is a run of complete lines from one file.
type Chunk struct {
	File   string // file identity, as returned by ID
	Path   string // path the lines were read from
	Data   []byte // one or more lines, each ending in '\n'
	Offset int64  // byte offset in File just after Data
}

// ID returns the identity under which a file's read position is kept.
func ID(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return abs
}

// Read reads path from offset to its end and sends its complete lines in
// chunks. A final line without a newline is not sent: it is not complete yet.
// Files ending in .gz are decompressed, and offset counts decompressed bytes.
func Read(ctx context.Context, path string, offset int64, out chan<- Chunk) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, ChunkSize))
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		defer zr.Close()
		if _, err := io.CopyN(io.Discard, zr, offset); err != nil {
			return fmt.Errorf("read %s: skip to %d: %w", path, offset, err)
		}
		r = zr
	} else if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	id := ID(path)
	var carry []byte // an incomplete line from the previous buffer
	for {
		buf := make([]byte, len(carry), ChunkSize+len(carry))
		copy(buf, carry)
		n, err := io.ReadFull(r, buf[len(carry):cap(buf)])
		buf = buf[:len(carry)+n]
		end := bytes.LastIndexByte(buf, '\n') + 1
		if end > 0 {
			offset += int64(end)
			select {
			case out <- Chunk{File: id, Path: path, Data: buf[:end], Offset: offset}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		carry = buf[end:]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// Follow reads path from offset and goes on reading what is appended, through
// rotation and re-creation, until ctx is done.
func Follow(ctx context.Context, path string, offset int64, out chan<- Chunk, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t, err := tail.TailFile(path, tail.Config{
		Location:      &tail.SeekInfo{Offset: offset, Whence: io.SeekStart},
		ReOpen:        true,
		Follow:        true,
		CompleteLines: true,
		Logger:        tail.DiscardingLogger,
	})
	if err != nil {
		return fmt.Errorf("follow %s: %w", path, err)
	}
	defer t.Cleanup()
	defer t.Stop()
	id := ID(path)
	for {
		var line *tail.Line
		select {
		case <-ctx.Done():
			return nil
		case line = <-t.Lines:
		}
		if line == nil {
			return fmt.Errorf("follow %s: %w", path, t.Err())
		}
		// Gather the lines that are already waiting into one chunk.
		c := Chunk{File: id, Path: path}
		for line != nil {
			if line.Err != nil {
				log.Warn("follow", "path", path, "err", line.Err)
			} else {
				c.Data = append(append(c.Data, line.Text...), '\n')
				c.Offset = line.SeekInfo.Offset
			}
			line = nil
			if len(c.Data) < ChunkSize {
				select {
				case line = <-t.Lines:
				default:
				}
			}
		}
		if len(c.Data) == 0 {
			continue
		}
		select {
		case out <- c:
		case <-ctx.Done():
			return nil
		}
	}
}
