// Package parser turns one access-log line into a Record.
//
// A Format is compiled once from a log format (an nginx log_format string, an
// Apache LogFormat string, or a preset name) and then applied to each line.
// The one idea that makes it fast: in a format, every field is followed by
// literal text, so a field is simply everything up to the next occurrence of
// that literal (skipping backslash-escaped characters, which is how nginx and
// Apache write a quote inside a quoted field). The compiled scanner walks the
// line once with bytes.IndexByte and decodes the few fields a count needs in
// place, without allocating. gonx (github.com/satyrius/gonx) is the format
// language's reference and the fallback for formats the scanner cannot split
// (two fields with nothing between them).
//
// Parsing is pure: it works on a []byte and never reads or writes files, so
// the same code serves live following, archive replay, tests and fuzzing. A
// Record's byte fields alias the line they came from (or, for fields that held
// escapes, the Record's own scratch buffer) and are only valid until the
// caller reuses that line's buffer or parses the next line into the Record.
//
// A path is text the stores keep and the API shows, so it is decoded from
// the log's escaping and then put in the one form every store holds
// (logtally.AppendEscaped): valid UTF-8, with a raw byte, a control byte or
// a backslash as \xHH, as nginx writes it. That is done here, once, where
// the path is taken from the line; a path that needs no escape is not copied.
package parser

import (
	"errors"
	"time"
)

// Rejection reasons. Every error returned by Format.Parse wraps exactly one of
// them, so callers can count rejected lines by reason with errors.Is.
var (
	// ErrFormat means the line does not have the shape of the format: a
	// literal is missing, or there are too few or too many fields.
	ErrFormat = errors.New("line does not match format")
	// ErrTimestamp means the time field is missing or cannot be read.
	ErrTimestamp = errors.New("bad timestamp")
	// ErrRequest means the request line is not "METHOD TARGET PROTOCOL".
	ErrRequest = errors.New("bad request line")
	// ErrNumber means a numeric field (status, bytes, request time) is not a
	// number in range.
	ErrNumber = errors.New("bad number")
	// ErrHost means the client address is empty.
	ErrHost = errors.New("bad client host")
)

// ErrBadSpec means a format string cannot be compiled. It is returned by New
// and Config.Compile, never by Parse.
var ErrBadSpec = errors.New("bad log format")

// Reasons lists every rejection reason in a fixed order, for counters that
// are reported by reason.
var Reasons = []error{ErrFormat, ErrTimestamp, ErrRequest, ErrNumber, ErrHost}

// Record is one parsed access-log line. Byte slices alias the parsed line or
// the Record's scratch buffer; see the package comment.
type Record struct {
	Host      []byte    // client address as written, or the left-most valid X-Forwarded-For address
	Time      time.Time // request time, UTC
	Method    []byte    // request method, e.g. GET
	Path      []byte    // request path without the query string, escaped: see logtally.AppendEscaped
	Query     []byte    // query string without '?', empty if none
	Protocol  []byte    // e.g. HTTP/1.1
	Status    int       // response status code
	Bytes     int64     // response body bytes ($body_bytes_sent, else $bytes_sent); 0 for "-"
	Referer   []byte    // Referer header, "-" if absent
	UserAgent []byte    // User-Agent header, "-" if absent

	// VHost is the virtual host ($server_name, $host, Apache %v or %V), nil
	// if the format has none.
	VHost []byte
	// RequestTime is how long the request took ($request_time, Apache %D or
	// %T); 0 if the format has none or the server wrote "-".
	RequestTime time.Duration

	// scratch holds unescaped copies of fields that contained escapes. It is
	// kept across Reset so that a reused Record stops allocating.
	scratch    []byte
	pathCopied bool // Path lies in scratch: see PathCopied
	// minute caches the last $time_local minute read into this Record:
	// lines come in time order, so most share the previous line's minute.
	minute minuteCache
}

// minuteCache maps the text of a $time_local without its seconds
// ("10/Oct/2026:13:55" and "-0700", packed into three words) to the Unix
// time of that minute.
type minuteCache struct {
	key [3]uint64
	sec int64
}

// PathCopied reports whether Path lies in the Record's own buffer, not in
// the line: its request held escapes, or its path needs them (see
// logtally.AppendEscaped). A caller that keeps Path past the next Parse
// into r, as one that keeps the line does, must then copy it.
func (r *Record) PathCopied() bool { return r.pathCopied }

// Reset clears r so that it can be reused for the next line. It keeps r's
// scratch buffer and time cache.
func (r *Record) Reset() { *r = Record{scratch: r.scratch[:0], minute: r.minute} }
