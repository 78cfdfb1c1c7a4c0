package api

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Limits on what a request may carry. A request past them gets a JSON
// error from the handler, as every other error does.
const (
	// MaxTarget is the longest request target (path and query) answered;
	// a longer one gets 414.
	MaxTarget = 16 << 10
	// MaxHeaders is the most bytes of header fields answered (names,
	// values and their separators); more get 431.
	MaxHeaders = 16 << 10
	// MaxHeaderBytes is what the http.Server that serves the API must
	// allow (http.Server.MaxHeaderBytes) for a request past MaxTarget or
	// MaxHeaders to reach the handler and get its JSON answer. net/http
	// answers a request line and headers larger than this itself, 431 in
	// text/plain.
	MaxHeaderBytes = 64 << 10
)

// Times a history parameter may name: from the Unix epoch to the last
// second that RFC 3339, and so a JSON answer, can write.
var (
	minTime = time.Unix(0, 0).UTC()
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// refuse answers a request that no endpoint could read: a target or
// headers past the limits, or a query string that does not parse. It
// reports whether it answered.
//
// The endpoints read their parameters with url.Values, which skips what
// does not parse: limit=%zz and limit=0;x=1 would quietly be the default
// limit. A query is checked whole here instead, once for every endpoint.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request) bool {
	status, msg := http.StatusOK, ""
	target := r.RequestURI
	if target == "" { // a request made in-process rather than read from a client
		target = r.URL.RequestURI()
	}
	switch {
	case len(target) > MaxTarget:
		status, msg = http.StatusRequestURITooLong,
			"request target longer than "+strconv.Itoa(MaxTarget)+" bytes"
	case headerBytes(r.Header) > MaxHeaders:
		status, msg = http.StatusRequestHeaderFieldsTooLarge,
			"request header fields larger than "+strconv.Itoa(MaxHeaders)+" bytes"
	default:
		if err := checkQuery(r.URL.RawQuery); err != nil {
			status, msg = http.StatusBadRequest, err.Error()
		}
	}
	if status == http.StatusOK {
		return false
	}
	if s.metrics != nil {
		s.metrics.requests.WithLabelValues("refused", strconv.Itoa(status)).Inc()
	}
	writeError(w, status, msg)
	return true
}

// headerBytes is the size of h as a client sent it, less the line ends.
func headerBytes(h http.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v)
		}
	}
	return n
}

// checkQuery reports the first parameter of a raw query string that does
// not parse, by name: a bad %-escape, or a semicolon, which url.ParseQuery
// no longer takes for a separator and drops with its parameter.
func checkQuery(raw string) error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		if n, _, semi := strings.Cut(name, ";"); semi {
			return errors.New("query parameter " + paramName(n) + ": a semicolon is not a separator: separate parameters with an ampersand")
		}
		if strings.Contains(value, ";") {
			return errors.New("query parameter " + paramName(name) + ": a semicolon is not a separator: separate parameters with an ampersand")
		}
		if _, err := url.QueryUnescape(name); err != nil {
			return errors.New("query parameter " + paramName(name) + ": bad %-escape in its name")
		}
		if _, err := url.QueryUnescape(value); err != nil {
			return errors.New("query parameter " + paramName(name) + ": bad %-escape in its value")
		}
	}
	return nil
}

// paramName is a parameter's name as written, quoted, and cut short enough
// for an error message.
func paramName(name string) string {
	if u, err := url.QueryUnescape(name); err == nil {
		name = u
	}
	const max = 64
	if len(name) > max {
		name = name[:max] + "..."
	}
	return strconv.Quote(name)
}

// checkTime reports a time that a history parameter may not name: before
// the Unix epoch or after the year 9999, which no answer could write.
func checkTime(name string, t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return errors.New(name + " is out of range")
	}
	return nil
}
