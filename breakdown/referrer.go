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
	start, colon := len(dst), -1
copy:
	for _, c := range afterScheme(ref) {
		switch refClass[c] {
		case classEnd:
			break copy
		case classAt:
			dst, colon = dst[:start], -1
			continue
		case classColon:
			if colon < 0 {
				colon = len(dst) - start
			}
		}
		dst = append(dst, lowerTable[c])
	}
	host, ok := dst[start:], true
	switch {
	case len(host) > 0 && host[0] == '[':
		host, ok = bracketed(host)
	case colon >= 0:
		host = host[:colon]
	}
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

// What a byte is to a Referer's authority.
const (
	classBad     uint8 = iota // never in a host
	classLabel                // a letter, a digit or '_'
	classDash                 // '-'
	classDot                  // '.'
	classColon                // ':', before a port or in an IPv6 address
	classAt                   // '@', after a user part
	classEnd                  // '/', '?', '#' or '\\', after the authority
	classBracket              // '[' or ']', around an IPv6 address
)

var (
	refClass   [256]uint8
	lowerTable [256]byte
)

func init() {
	for c := range 256 {
		lowerTable[c] = lower(byte(c))
		switch l := lower(byte(c)); {
		case 'a' <= l && l <= 'z' || '0' <= l && l <= '9' || l == '_':
			refClass[c] = classLabel
		case l == '-':
			refClass[c] = classDash
		case l == '.':
			refClass[c] = classDot
		case l == ':':
			refClass[c] = classColon
		case l == '@':
			refClass[c] = classAt
		case l == '/' || l == '?' || l == '#' || l == '\\':
			refClass[c] = classEnd
		case l == '[' || l == ']':
			refClass[c] = classBracket
		}
	}
}

// afterScheme returns ref after its "scheme://", or all of ref if it has
// none. A scheme is a letter, then letters, digits, '+', '-' or '.'.
func afterScheme(ref []byte) []byte {
	i := bytes.IndexByte(ref[:min(len(ref), 33)], ':')
	if i <= 0 || len(ref) < i+3 || ref[i+1] != '/' || ref[i+2] != '/' {
		return ref
	}
	for j, c := range ref[:i] {
		if cl := refClass[c]; !(cl == classLabel && c != '_' && (j > 0 || c > '9') || j > 0 && (c == '+' || c == '-' || c == '.')) {
			return ref
		}
	}
	return ref[i+3:]
}

// bracketed returns the bracketed IPv6 address that starts the
// lower-case authority, without its port, and false for an unclosed
// bracket, text after one, or a byte that no IPv6 address holds.
func bracketed(auth []byte) ([]byte, bool) {
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

// validLabels reports whether the lower-case host h, not a bracketed
// address, is dot-separated labels of letters, digits, '-' and '_' (which
// some hosts have, though DNS names should not), each of 1 to 63 bytes and
// neither starting nor ending with '-', as DNS wants.
func validLabels(h []byte) bool {
	n := 0
	for i, c := range h {
		switch refClass[c] {
		case classLabel:
		case classDot:
			if n == 0 || h[i-1] == '-' {
				return false
			}
			n = 0
			continue
		case classDash:
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
