// Package tailer reads access logs and hands out their complete lines in
// chunks, each tagged with the file it came from and the byte offset just
// after it.
//
// The offset is what makes the log a durable queue: a consumer commits the
// offset together with what it derived from the chunk, and hands that offset
// back to resume. The one idea that makes this survive log rotation is that a
// file is known by a fingerprint of its first line, not by its path or inode:
// access.log renamed to access.log.1, then compressed to access.log.1.gz, is
// still the same file, and resumes at the same offset (for .gz, an offset in
// the decompressed stream). Replaying the archive of a file that was read live
// therefore adds nothing.
//
// Following is done by polling, with fsnotify events only as a wake-up. A
// poll cannot miss data: it compares what is on disk with what has been read.
// Notification-driven tailers (github.com/nxadm/tail, which this package
// replaced) lose lines appended between their last read and the setup of a
// new watch, stop reading a renamed file while the writer still appends to
// it, and call os.Exit on some stat errors; none of that can happen here,
// because every open file is read by descriptor until it has been idle for a
// grace period or removed. TestDifferentialNxadmTail runs both side by side.
//
// Lines are delivered in chunks, not one at a time, so that a channel
// operation and an allocation are paid per chunk rather than per line.
package tailer

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// ChunkSize is the size of the buffers replay reads with.
const ChunkSize = 1 << 20

// Defaults for Config.
const (
	// DefaultPollInterval is how often open files are checked for new data.
	DefaultPollInterval = 50 * time.Millisecond
	// DefaultRescanInterval is how often the paths and globs are matched
	// again to find new files, besides on file-system events.
	DefaultRescanInterval = 3 * time.Second
	// DefaultIdleGrace is how long a rotated file is still read after its
	// last growth: the writer may go on appending to it until it reopens.
	DefaultIdleGrace = 30 * time.Second
	// DefaultMaxLine is the longest line that is buffered; longer lines are
	// skipped and counted.
	DefaultMaxLine = 64 << 10
)

var (
	// ErrNoFingerprint means a file does not have a complete first line (or
	// fingerprintSize bytes) yet, so it has no identity and nothing to read.
	ErrNoFingerprint = errors.New("file has no complete first line yet")
	// ErrLongLine is the reason a line longer than the maximum line length
	// was skipped. It is used to count such lines next to parse rejections.
	ErrLongLine = errors.New("line too long")
	// ErrNotRegular means a path names a named pipe, a device, a socket or a
	// directory, not a regular file. Those are refused: they have no offset
	// to resume from, and a pipe may wait for a writer, and a device never
	// end.
	ErrNotRegular = errors.New("not a regular file")
)

// Chunk is a run of complete lines from one file.
type Chunk struct {
	File    string // file identity, as returned by ID
	Path    string // path the lines were read from
	Data    []byte // zero or more lines, each ending in '\n' (given one if its file ended without)
	Offset  int64  // byte offset in File just after Data (and after skipped lines)
	Skipped int    // lines before Offset that were too long and are not in Data
	// Pattern is the index, in the patterns a Tailer follows or the paths
	// a Reader replays, of the one that matched the file (for a rotated
	// copy of a plain path, that path's), so that lines can be told apart
	// by what they were read for (a site per file).
	Pattern int

	buf    []byte        // the whole buffer Data lies in
	free   chan<- []byte // where Release gives buf back; nil: nowhere
	mapped *mapping      // the segment of a mapped file Data lies in, if it is one
}

// Release gives the chunk's buffer back to the Reader that read it, to read
// later chunks into, once nothing reads Data or anything cut from it any
// more. A replay of gigabytes then reads into a few buffers, rather than
// allocating, zeroing and collecting one a chunk. Releasing is optional (a
// chunk not released is collected, as any value), and only the one owner
// of a chunk may do it, once: a buffer released twice would be read into
// for two chunks at once. A chunk cut from a mapped file lets go of its
// segment instead, which is unmapped after its last chunk.
func (c Chunk) Release() {
	if c.mapped != nil {
		c.mapped.release()
		return
	}
	if c.free == nil {
		return
	}
	select {
	case c.free <- c.buf[:0]:
	default: // enough buffers are free already
	}
}

// Config configures how files are followed and how long lines may be.
type Config struct {
	Poll      time.Duration // how often open files are checked for new data
	Rescan    time.Duration // how often paths and globs are matched again
	IdleGrace time.Duration // how long a rotated file is read after its last growth
	MaxLine   int           // longest line kept, in bytes
}

// RegisterFlags registers the flags every command takes (the line length) on
// fs; follow adds the ones that matter only for following files.
func (c *Config) RegisterFlags(fs *flag.FlagSet, follow bool) {
	fs.IntVar(&c.MaxLine, "max-line", DefaultMaxLine, "longest line in `bytes`; longer lines are skipped and counted")
	if follow {
		fs.DurationVar(&c.Poll, "poll-interval", DefaultPollInterval, "how often followed files are checked for new lines")
		fs.DurationVar(&c.Rescan, "rescan-interval", DefaultRescanInterval, "how often paths and globs are matched again for new files")
		fs.DurationVar(&c.IdleGrace, "idle-grace", DefaultIdleGrace, "how long a rotated file is still read after it last grew")
	}
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Poll <= 0 {
		c.Poll = DefaultPollInterval
	}
	if c.Rescan <= 0 {
		c.Rescan = DefaultRescanInterval
	}
	if c.IdleGrace <= 0 {
		c.IdleGrace = DefaultIdleGrace
	}
	if c.MaxLine <= 0 {
		c.MaxLine = DefaultMaxLine
	}
	return c
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	if c.MaxLine < 0 {
		return fmt.Errorf("max line %d: must not be negative", c.MaxLine)
	}
	return nil
}

// Positions looks up the committed read offset of a file identity.
type Positions func(id string) (offset int64, ok bool, err error)

// offsets tells where to start reading a file known by its identity. It
// keeps, by identity, the offset just after the last chunk sent: that is
// ahead of the committed positions until the consumer commits, and it is
// what keeps a file met again under another name (renamed, compressed,
// named twice) from being read twice. Following and replay both use it.
type offsets struct {
	committed Positions
	sent      map[string]int64
}

func newOffsets(committed Positions) offsets {
	return offsets{committed: committed, sent: make(map[string]int64)}
}

// start returns the offset to read the file id from: the further of its
// committed position and what was sent of it. known reports whether either
// exists, that is, whether the file was ever read.
func (o *offsets) start(id string) (off int64, known bool, err error) {
	off, sent := o.sent[id]
	stored, ok, err := o.committed(id)
	if err != nil {
		return 0, false, err
	}
	if ok && stored > off {
		off = stored
	}
	return off, sent || ok, nil
}
