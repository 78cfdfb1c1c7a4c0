package classify

import (
	"bytes"
	"net/netip"
	"unsafe"
)

// clientBuf holds a client address rewritten to its one spelling: the
// longest is an IPv6 address, 39 bytes.
type clientBuf [48]byte

// client returns the client address host as one visitor is known by,
// whatever the spelling the server logged:
//
//   - an IPv4-mapped IPv6 address (::ffff:192.0.2.7, as a dual-stack socket
//     reports an IPv4 client) is its IPv4 address, 192.0.2.7;
//   - an IPv6 address is in its canonical form (2001:DB8:0::1 is
//     2001:db8::1);
//   - a port after an address or a name is dropped (192.0.2.7:51234,
//     [2001:db8::1]:443, host.example:8080): a client's connections differ
//     by port.
//
// Anything else (an IPv4 address, a host name, what does not parse as an
// address) is kept as written. The common case, an address with no colon,
// returns at once; the others are written into buf, so client never
// allocates.
func client(host []byte, buf *clientBuf) []byte {
	colon := bytes.IndexByte(host, ':')
	if colon < 0 {
		return host
	}
	last := bytes.LastIndexByte(host, ':')
	switch {
	case host[0] == '[': // [v6] or [v6]:port
		end := bytes.IndexByte(host, ']')
		if end < 0 || !(end == len(host)-1 || end == last-1 && port(host[last+1:])) {
			return host
		}
		if ip, ok := parseIP(host[1:end]); ok {
			return ip.Unmap().AppendTo(buf[:0])
		}
		return host
	case colon == last: // one colon: an IPv4 address or a name, and a port
		if colon > 0 && port(host[colon+1:]) {
			return host[:colon]
		}
		return host
	}
	if ip, ok := parseIP(host); ok {
		return ip.Unmap().AppendTo(buf[:0])
	}
	// An IPv4-mapped address with a port and no brackets,
	// ::ffff:192.0.2.7:51234, is no IPv6 address.
	if ip, ok := parseIP(host[:last]); ok && ip.Is4In6() && port(host[last+1:]) {
		return ip.Unmap().AppendTo(buf[:0])
	}
	return host
}

// parseIP parses an IP address without a zone. It turns away names before
// asking netip, whose errors allocate.
func parseIP(b []byte) (netip.Addr, bool) {
	if len(b) == 0 || len(b) > 45 {
		return netip.Addr{}, false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' || c == ':' || c == '.') {
			return netip.Addr{}, false
		}
	}
	// ParseAddr keeps no reference to its argument, so viewing the bytes
	// as a string without a copy is safe.
	ip, err := netip.ParseAddr(unsafe.String(&b[0], len(b)))
	return ip, err == nil
}

// port reports whether p is a port number: 1 to 5 digits.
func port(p []byte) bool {
	if len(p) == 0 || len(p) > 5 {
		return false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
