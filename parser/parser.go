// Package parser turns one access-log line into a Record.
//
// A Format is compiled once from an nginx log_format string (the format
// language of github.com/satyrius/gonx) and then applied to each line. Parsing
// is pure: it works on a []byte and never reads or writes files, so the same
// code serves live following, archive replay, tests and fuzzing. A Record's
// byte fields alias the line they came from and are only valid until the
// caller reuses that line's buffer.
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
	// ErrNumber means a numeric field (status, bytes) is not a number in range.
	ErrNumber = errors.New("bad number")
	// ErrHost means the client address is empty.
	ErrHost = errors.New("bad client host")
)

// ErrBadSpec means a format string cannot be compiled. It is returned by New,
// never by Parse.
var ErrBadSpec = errors.New("bad log format")

// Reasons lists every rejection reason in a fixed order, for counters that
// are reported by reason.
var Reasons = []error{ErrFormat, ErrTimestamp, ErrRequest, ErrNumber, ErrHost}

// Record is one parsed access-log line. Byte slices alias the parsed line.
type Record struct {
	Host      []byte    // client address as written
	Time      time.Time // request time, UTC
	Method    []byte    // request method, e.g. GET
	Path      []byte    // request path without the query string
	Query     []byte    // query string without '?', empty if none
	Protocol  []byte    // e.g. HTTP/1.1
	Status    int       // response status code
	Bytes     int64     // response body bytes; 0 for "-"
	Referer   []byte    // Referer header, "-" if absent
	UserAgent []byte    // User-Agent header, "-" if absent
}

// Reset clears r so that it can be reused for the next line.
func (r *Record) Reset() { *r = Record{} }
