package api

import (
	"net/http"
	"net/url"
	"slices"
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

// refused returns why a request can be read by no endpoint: a target or
// headers past the limits, or a query string that does not parse; nil if
// it can be read.
//
// The endpoints read their parameters with url.Values, which skips what
// does not parse: limit=%zz and limit=0;x=1 would quietly be the default
// limit. A query is checked whole here instead, once for every endpoint.
func refused(r *http.Request) error {
	target := r.RequestURI
	if target == "" { // a request made in-process rather than read from a client
		target = r.URL.RequestURI()
	}
	switch {
	case len(target) > MaxTarget:
		return &Error{Code: CodeTargetTooLong, Message: "request target longer than " + strconv.Itoa(MaxTarget) + " bytes"}
	case headerBytes(r.Header) > MaxHeaders:
		return &Error{Code: CodeHeadersTooLarge, Message: "request header fields larger than " + strconv.Itoa(MaxHeaders) + " bytes"}
	}
	return checkQuery(r.URL.RawQuery)
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
			return invalid("query parameter " + paramName(n) + ": a semicolon is not a separator: separate parameters with an ampersand")
		}
		if strings.Contains(value, ";") {
			return invalid("query parameter " + paramName(name) + ": a semicolon is not a separator: separate parameters with an ampersand")
		}
		if _, err := url.QueryUnescape(name); err != nil {
			return invalid("query parameter " + paramName(name) + ": bad %-escape in its name")
		}
		if _, err := url.QueryUnescape(value); err != nil {
			return invalid("query parameter " + paramName(name) + ": bad %-escape in its value")
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
		return invalid(name + " is out of range")
	}
	return nil
}

// request is a request as the handlers read it: its query parsed once,
// when it has one. The parameters that choose what answers (site, scope,
// counter) are taken out of query as they are read, so that an endpoint's
// own check for unknown parameters does not see them; r.URL is never
// changed.
type request struct {
	*http.Request
	query url.Values
}

func newRequest(r *http.Request) *request {
	req := &request{Request: r}
	if r.URL.RawQuery != "" { // the header poll has none: it costs no parsing
		req.query = r.URL.Query()
	}
	return req
}

// has reports whether the query gives name.
func (r *request) has(name string) bool { return r.query.Has(name) }

// only rejects query parameters the endpoint does not know, so that a
// typo is an error rather than silently ignored.
func (r *request) only(known ...string) error {
	for name := range r.query {
		if !slices.Contains(known, name) {
			return invalid("unknown query parameter " + strconv.Quote(name))
		}
	}
	return nil
}

// single returns a parameter given at most once, or def.
func (r *request) single(name, def string) (string, error) {
	vals := r.query[name]
	switch len(vals) {
	case 0:
		return def, nil
	case 1:
		return vals[0], nil
	}
	return "", invalid(name + " given more than once")
}

// take reads a parameter given at most once and takes it out of the query;
// given is false when the query does not give it.
func (r *request) take(name string) (value string, given bool, err error) {
	if !r.has(name) {
		return "", false, nil
	}
	value, err = r.single(name, "")
	r.query.Del(name)
	return value, true, err
}

// intParam reads an optional integer parameter within [lo, hi].
func (r *request) intParam(name string, def, lo, hi int) (int, error) {
	if !r.has(name) {
		return def, nil
	}
	if len(r.query[name]) > 1 {
		return 0, invalid(name + " given more than once")
	}
	n, err := strconv.Atoi(r.query.Get(name))
	if err != nil || n < lo || n > hi {
		return 0, invalid(name + " must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi))
	}
	return n, nil
}
