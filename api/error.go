package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/logtally/logtally"
)

// Code is the kind of an Error: what went wrong, which decides the status
// of the answer (see statusOf).
type Code string

// Codes of Error.
const (
	CodeInvalid          Code = "invalid"            // 400: a parameter or request that cannot be answered as it is
	CodeUnauthorized     Code = "unauthorized"       // 401: the admin listener's token missing or wrong
	CodeForbidden        Code = "forbidden"          // 403: a browser's preflight from an origin not allowed
	CodeNotFound         Code = "not_found"          // 404: no such endpoint, site, counter or ratio, or nothing kept to answer from
	CodeMethodNotAllowed Code = "method_not_allowed" // 405
	CodeTargetTooLong    Code = "target_too_long"    // 414: past MaxTarget
	CodeHeadersTooLarge  Code = "headers_too_large"  // 431: past MaxHeaders
	CodeTooMany          Code = "too_many"           // 429: too many heavy queries at once
	CodeUnavailable      Code = "unavailable"        // 503: not now; Error.RetryAfter says when
	CodeDamaged          Code = "damaged"            // 503: the stored history it reads is damaged
	CodeInternal         Code = "internal"           // 500: a bug, or a store that failed; never shown
)

// statusOf is the one place where an error becomes an HTTP status.
func statusOf(code Code) int {
	switch code {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeTargetTooLong:
		return http.StatusRequestURITooLong
	case CodeHeadersTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case CodeTooMany:
		return http.StatusTooManyRequests
	case CodeUnavailable, CodeDamaged:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Error is an error the API answers a request with. Handlers return it
// (or any error, which is internal); writeError turns it into the answer:
// the status its Code maps to, and a JSON ErrorBody with its Message. The
// cause, if any, is logged and never shown.
type Error struct {
	Code    Code
	Message string // what the client reads: what went wrong, and what to do
	// RetryAfter, if not zero, is sent as Retry-After (whole seconds): when
	// an answer that is not possible now may be.
	RetryAfter time.Duration
	Err        error // the cause, for the log
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
}

// invalid is a 400 that says what is wrong with the request.
func invalid(msg string) *Error { return &Error{Code: CodeInvalid, Message: msg} }

// notFound is a 404 that says what is not there, and where to look.
func notFound(msg string) *Error { return &Error{Code: CodeNotFound, Message: msg} }

// unavailable is a 503 that says why, with when to ask again.
func unavailable(msg string, retry time.Duration) *Error {
	return &Error{Code: CodeUnavailable, Message: msg, RetryAfter: retry}
}

// internalMessage is all a client learns of an internal error.
const internalMessage = "internal error"

// damagedMessage is what a client learns of a store's damaged file: not
// where it is, nor what of it is damaged, which the status tells the
// operator.
const damagedMessage = "the stored history this answer reads is damaged: the operator finds what, and how to recover, in /api/v1/status"

// asError returns err as an *Error: itself, or, for an error the API did
// not make, a damaged one for logtally.ErrDamaged (a store whose file
// is damaged where no answer can be made around it), else an internal one
// that carries it.
func asError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, logtally.ErrDamaged):
		e = &Error{Code: CodeDamaged, Message: damagedMessage, Err: err}
	default:
		e = &Error{Code: CodeInternal, Err: err}
	}
	return e
}

// writeError answers a request with err: every error answer is written
// here. An error that is not an *Error, or whose Code is CodeInternal, is
// answered "internal error" and logged with the path; the cause of any
// other, if it has one, is logged as a warning.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := asError(err)
	msg := e.Message
	switch {
	case e.Code == CodeInternal:
		msg = internalMessage
		s.deps.Logger.Error("api", "path", r.URL.Path, "err", e.Err)
	case e.Err != nil:
		s.deps.Logger.Warn("api", "path", r.URL.Path, "err", e.Err)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter/time.Second)))
	}
	writeJSON(w, statusOf(e.Code), ErrorBody{Error: msg})
}

// writeJSON writes v as the JSON body of an answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"`+internalMessage+`"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
