package tailer

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// content returns what f holds from offset on, read through raw (f itself,
// or f wrapped to count what is read). A .gz file is decompressed, and its
// offset, which counts decompressed bytes, is reached by decompressing. A
// file shorter than offset holds nothing from there on: a .gz may be an
// older copy of a file that was read further.
func content(f *os.File, raw io.Reader, gz bool, offset int64) (io.Reader, error) {
	if !gz {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return nil, err
		}
		return raw, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(raw, 256<<10))
	if err != nil {
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, zr, offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("skip to %d: %w", offset, err)
	}
	return zr, nil // at its end, if it ended before offset
}

// Reader reads whole files once, for replay. Its counters may be read from
// any goroutine while it reads, to show progress.
type Reader struct {
	MaxLine int // longest line kept; DefaultMaxLine if zero
	BufSize int // size of each chunk's buffer; ChunkSize if zero

	// Bytes counts the bytes read from disk (compressed bytes for .gz),
	// including those skipped to reach the start offset.
	Bytes atomic.Int64

	freeOnce sync.Once
	free     chan []byte // buffers released by the chunks' consumer (Chunk.Release)
	// noMap reads plain files into buffers, as .gz ones, rather than
	// mapping them (see mapped.go): the tests' way to read both ways.
	noMap bool
}

// freeBuffers is how many released buffers a Reader keeps: about as many
// chunks as a replay has on their way from the reader to being applied.
const freeBuffers = 16

// Replay reads each of paths to its end, as Read does, from where its file
// was left: the further of its committed position and what this Replay
// has sent of it already. A file is known by its identity, as when
// following, so one named twice, or named with its compressed copy, is read
// once. A file without a complete first line has nothing to read and is
// passed over; a path that is not a regular file (a FIFO, a device) stops
// the replay with a *NotRegularError.
func (r *Reader) Replay(ctx context.Context, paths []string, positions Positions, out chan<- Chunk) error {
	o := newOffsets(positions)
	for i, path := range paths {
		if err := r.replay(ctx, path, i, &o, out); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) replay(ctx context.Context, path string, pattern int, o *offsets, out chan<- Chunk) error {
	f, err := openRegular(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	id, err := readID(f, isGzip(path))
	if errors.Is(err, ErrNoFingerprint) {
		return nil
	}
	if err != nil {
		return err
	}
	off, _, err := o.start(id)
	if err != nil {
		return fmt.Errorf("position of %s: %w", path, err)
	}
	end, err := r.read(ctx, f, id, off, pattern, out)
	o.sent[id] = end
	return err
}

// Read reads path from offset to its end and sends its complete lines in
// chunks tagged with id. For a plain file a final line without a newline is
// not sent: the file may still be written. A .gz file is complete, so its
// last line is sent even without one. Files ending in .gz are decompressed,
// and offset counts decompressed bytes. Reading stops when ctx is done, even
// where nothing is sent for long (a file without newlines). A path that is
// not a regular file is refused with a *NotRegularError.
func (r *Reader) Read(ctx context.Context, path, id string, offset int64, out chan<- Chunk) (end int64, err error) {
	f, err := openRegular(path)
	if err != nil {
		return offset, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return r.read(ctx, f, id, offset, 0, out)
}

func (r *Reader) read(ctx context.Context, f *os.File, id string, offset int64, pattern int, out chan<- Chunk) (end int64, err error) {
	path, gz := f.Name(), isGzip(f.Name())
	r.freeOnce.Do(func() { r.free = make(chan []byte, freeBuffers) })
	lr := lineReader{id: id, path: path, split: splitter{max: r.MaxLine, off: offset}, size: r.BufSize, pattern: pattern, free: r.free}
	if lr.split.max <= 0 {
		lr.split.max = DefaultMaxLine
	}
	if lr.size <= 0 {
		lr.size = ChunkSize
	}
	send := func(c Chunk) error {
		select {
		case out <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if !gz && !r.noMap {
		if ok, err := r.readMapped(ctx, f, &lr, send); ok {
			if err != nil {
				err = fmt.Errorf("read %s: %w", path, err)
			}
			return lr.split.off, err
		}
	}
	src, err := content(f, &counter{r: ctxReader{ctx, f}, n: &r.Bytes}, gz, offset)
	if err != nil {
		return offset, fmt.Errorf("read %s: %w", path, err)
	}
	if !gz {
		r.Bytes.Add(offset)
	}
	if _, err := lr.readFrom(src, send); err != nil {
		return lr.split.off, err
	}
	if gz {
		err = lr.flush(send)
	}
	return lr.split.off, err
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
