package breakdown

import (
	"bytes"
)

// Referrers. A Referer is a URL that a browser sends of the page that
// linked to this one; of it only the host is kept. Its path and query can
// name a person (a profile, a search, a webmail message) and its user part
// is a credential, so neither is ever copied out of the line.

// hostResult is what a Referer's host turned out to be.
type hostResult uint8

const (
	hostNone    hostResult = iota // no referrer: empty or "-"
	hostOK                        // a host, appended
	hostInvalid                   // a Referer that names no host
)

// appendRefHost appends the normalized host of the Referer ref to dst: in
// lower case, without a port, a trailing dot or leading "www."s. A
// Referer without a scheme ("example.com/page") is read as starting with
// its host; one whose host is not a DNS name, an IPv4 address or a
// bracketed IPv6 address is hostInvalid, and dst is returned as it was.
// The authority is copied once, in lower case, and then cut down in
// place: the user part that a '@' ends is dropped as soon as it is seen,
// and never leaves dst's spare capacity.
func appendRefHost(dst, ref []byte) ([]byte, hostResult) {
	if len(ref) == 0 || len(ref) == 1 && ref[0] == '-' {
		return dst, hostNone
	}
	start := len(dst)
	for _, c := range afterScheme(ref) {
		if c == '/' || c == '?' || c == '#' || c == '\\' {
			break
		}
		if c == '@' {
			dst = dst[:start]
			continue
		}
		dst = append(dst, lower(c))
	}
	host, ok := cutPort(dst[start:])
	host = bytes.TrimRight(host, ".")
	if !ok || len(host) == 0 || len(host) > MaxHost || host[0] != '[' && !validLabels(host) {
		return dst[:start], hostInvalid
	}
	for {
		w, ok := bytes.CutPrefix(host, []byte("www."))
		if !ok || bytes.IndexByte(w, '.') <= 0 {
			break
		}
		host = dst[start : start+copy(dst[start:], w)]
	}
	return dst[:start+len(host)], hostOK
}

// afterScheme returns ref after its "scheme://", or all of ref if it has
// none.
func afterScheme(ref []byte) []byte {
	for i, c := range ref {
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0 && bytes.HasPrefix(ref[i:], []byte("://")):
			return ref[i+3:]
		default:
			return ref
		}
	}
	return ref
}

// cutPort returns the host of a lower-case authority without its port: a bracketed
// IPv6 address with its brackets, else what comes before the first ':'.
// It reports false for an unclosed bracket or text after one.
func cutPort(auth []byte) ([]byte, bool) {
	if len(auth) > 0 && auth[0] == '[' {
		end := bytes.IndexByte(auth, ']')
		if end < 0 || end+1 < len(auth) && auth[end+1] != ':' {
			return nil, false
		}
		for _, c := range auth[1:end] {
			if !(c == ':' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return nil, false
			}
		}
		return auth[:end+1], end > 1
	}
	if i := bytes.IndexByte(auth, ':'); i >= 0 {
		return auth[:i], true
	}
	return auth, true
}

// validLabels reports whether the lower-case host h, not a bracketed
// address, is dot-separated labels of letters, digits, '-' and '_' (which
// some hosts have, though DNS names should not), each of 1 to 63 bytes and
// neither starting nor ending with '-', as DNS wants.
func validLabels(h []byte) bool {
	n := 0
	for i, c := range h {
		switch {
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_':
		case c == '.':
			if n == 0 || h[i-1] == '-' {
				return false
			}
			n = 0
			continue
		case c == '-':
			if n == 0 {
				return false
			}
		default:
			return false
		}
		if n++; n > 63 {
			return false
		}
	}
	return n > 0 && h[len(h)-1] != '-'
}

// lower returns the lower case of an ASCII letter, and any other byte as it
// is.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// ownHost returns the normalized form of a host the operator names as the
// site's own, as a Referer's host would be normalized.
func ownHost(h string) ([]byte, bool) {
	if h == "" || bytes.ContainsAny([]byte(h), "/?#@") {
		return nil, false
	}
	out, res := appendRefHost(nil, []byte(h))
	return out, res == hostOK
}
