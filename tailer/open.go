package tailer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the error for a path that names something other than a
// regular file. It wraps ErrNotRegular.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string { return e.Path + " " + describe(e.Mode) }

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// describe says what a file of mode m is, as the end of a sentence that
// starts with its path.
func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "is a directory"
	case m&fs.ModeNamedPipe != 0:
		return "is a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "is a character device"
	case m&fs.ModeDevice != 0:
		return "is a block device"
	case m&fs.ModeSocket != 0:
		return "is a socket"
	}
	return "is not a regular file"
}

// Fixes for a path that is not a regular file, when following and when
// replaying.
const (
	followFix    = "logtally follows regular files, which it reads by offset; have the server write its log to a file, and name that file"
	followDirFix = "logtally follows regular files; name the log files in it, or a quoted glob such as '%s/*.log'"
	replayFix    = "replay reads regular files, plain or .gz; save the stream to a file, and replay that"
	replayDirFix = "replay reads regular files; name the files in it, such as %s/access.log*"
	readFix      = "let the user logtally runs as read it (on Debian, /var/log/nginx is readable by the adm group)"
)

// withFix adds to err, about path, what to do about it.
func withFix(err error, path string, replay bool) error {
	var nr *NotRegularError
	switch {
	case errors.As(err, &nr) && nr.Mode.IsDir() && replay:
		return fmt.Errorf("%w: "+replayDirFix, err, path)
	case errors.As(err, &nr) && nr.Mode.IsDir():
		return fmt.Errorf("%w: "+followDirFix, err, path)
	case errors.As(err, &nr) && replay:
		return fmt.Errorf("%w: %s", err, replayFix)
	case errors.As(err, &nr):
		return fmt.Errorf("%w: %s", err, followFix)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s", err, readFix)
	}
	return err
}

// openRegular opens path for reading if it is a regular file, and returns a
// *NotRegularError if it is not. It never blocks: a named pipe is opened
// without waiting for a writer (O_NONBLOCK, which changes nothing for a
// regular file), then refused, as is a device, which may never end.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// ctxReader reads from r until ctx is done, so that a read that sends
// nothing for long (a huge file without a newline) still stops when asked.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
