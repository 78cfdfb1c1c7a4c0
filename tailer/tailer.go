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
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
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

// Config configures how files are followed.
type Config struct {
	Poll time.Duration // how often a followed file is checked for new data
}

// RegisterFlags registers the tailer's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Poll, "poll-interval", DefaultPollInterval, "how often followed files are checked for new lines")
}

// DefaultPollInterval is how often Follow looks for new data once it has
// read to the end of a file.
const DefaultPollInterval = 200 * time.Millisecond

// Follow reads path from offset and goes on reading what is appended until
// ctx is done, checking every poll interval (DefaultPollInterval if zero).
// When the file at path is replaced (rotation) it finishes the old file and
// starts the new one from its beginning; when it shrinks (truncation) it
// starts again from the beginning.
func Follow(ctx context.Context, path string, offset int64, out chan<- Chunk, poll time.Duration, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	id := ID(path)
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var carry []byte
	buf := make([]byte, ChunkSize)
	for {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					log.Warn("follow: open", "path", path, "err", err)
				}
				f = nil
			} else if _, err := f.Seek(offset, io.SeekStart); err != nil {
				return fmt.Errorf("follow %s: %w", path, err)
			}
		}
		if f != nil {
			for {
				n, err := f.Read(buf)
				if n > 0 {
					data := append(carry, buf[:n]...)
					end := bytes.LastIndexByte(data, '\n') + 1
					if end > 0 {
						offset += int64(end)
						c := Chunk{File: id, Path: path, Data: data[:end:end], Offset: offset}
						select {
						case out <- c:
						case <-ctx.Done():
							return nil
						}
					}
					carry = append([]byte(nil), data[end:]...)
				}
				if err != nil {
					break
				}
			}
			if replaced, shrunk := changed(f, path, offset+int64(len(carry))); replaced || shrunk {
				// The old file has been read to its end; start the new one.
				f.Close()
				f, carry, offset = nil, nil, 0
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// changed reports whether path now names another file than f, or whether f
// is now shorter than what has been read of it.
func changed(f *os.File, path string, read int64) (replaced, shrunk bool) {
	fi, err := f.Stat()
	if err != nil {
		return true, false
	}
	if fi.Size() < read {
		return false, true
	}
	pi, err := os.Stat(path)
	if err != nil {
		return false, false // gone, and nothing new yet: keep reading the open file
	}
	return !os.SameFile(fi, pi), false
}
