package ingest

import (
	"bytes"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// A rejected line is shown to operators (the status, the dashboard, the
// log) so that they can tell why it was rejected, but it is still a line
// of someone's request: redact keeps its shape and drops what is personal.
// Client addresses are masked to their network (IPv4 /24, IPv6 /48), the
// user and identity fields of a Common Log Format line and the user
// information of a URL are dropped, and every query string is cut to its
// "?". What is left tells a line in the wrong format from a right one.

// separators end the words that redact looks at one by one.
const separators = " \t\"[](),;=?@"

// redact returns line with what is personal dropped (see above), cut to
// max bytes, as valid UTF-8.
func redact(line []byte, max int) string {
	s := strings.ToValidUTF8(string(head(line, 4*max)), "\uFFFD")
	s = dropUsers(s)
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		i := strings.IndexAny(s, separators)
		if i < 0 {
			i = len(s)
		}
		b.WriteString(maskAddr(s[:i]))
		s = s[i:]
		if s == "" {
			break
		}
		if s[0] == '?' {
			b.WriteString("?…")
			s = s[queryEnd(s):]
			continue
		}
		b.WriteByte(s[0])
		s = s[1:]
	}
	return cut(b.String(), max)
}

// head returns what redact needs to read of line for an answer of at most
// max/4 bytes (a query string it cuts may shrink much): the first max bytes,
// less a word that the cut would split. A split address is no longer an
// address, and would be left as it is, unmasked; a word too long to be an
// address is kept cut.
func head(line []byte, max int) []byte {
	if len(line) <= max {
		return line
	}
	if bytes.IndexByte([]byte(separators), line[max]) < 0 {
		if i := bytes.LastIndexAny(line[:max], separators); i >= 0 {
			return line[:i+1]
		}
	}
	return line[:max]
}

// queryEnd returns where the query string at the start of s ends: at a
// space, a quote or the end.
func queryEnd(s string) int {
	if i := strings.IndexAny(s, " \t\""); i >= 0 {
		return i
	}
	return len(s)
}

// maskAddr returns tok masked to its network if it is an IP address (an
// IPv6 one possibly in brackets' content, with a zone), and tok otherwise.
func maskAddr(tok string) string {
	if len(tok) < 2 || strings.IndexFunc(tok, func(r rune) bool { return r == '.' || r == ':' }) < 0 {
		return tok
	}
	addr, err := netip.ParseAddr(tok)
	if err != nil {
		return maskURLHost(tok)
	}
	if addr.Is4() || addr.Is4In6() {
		p := addr.Unmap().As4()
		return netip.AddrFrom4([4]byte{p[0], p[1], p[2], 0}).String() + "/24"
	}
	pfx, _ := addr.WithZone("").Prefix(48)
	return pfx.String()
}

// maskURLHost masks the host of a host:port or a URL whose host is an
// address (http://192.0.2.7:8080/x).
func maskURLHost(tok string) string {
	rest, scheme := tok, ""
	if i := strings.Index(tok, "://"); i >= 0 {
		scheme, rest = tok[:i+3], tok[i+3:]
	}
	host, tail := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, tail = rest[:i], rest[i:]
	}
	if ap, err := netip.ParseAddrPort(host); err == nil {
		return scheme + maskAddr(ap.Addr().String()) + tail
	}
	if host != rest || scheme != "" {
		if addr, err := netip.ParseAddr(host); err == nil {
			return scheme + maskAddr(addr.String()) + tail
		}
	}
	return tok
}

// dropUsers drops the identity and user fields of a line in the Common
// Log Format ("host ident user [time] ..."), wherever the host is (a
// virtual host may come first, as in Apache's vhost_combined: a line in
// another format than the one given is what is rejected most), and the
// user information of any URL (scheme://user:pass@host).
func dropUsers(s string) string {
	if i := strings.Index(s, " ["); i > 0 {
		words := strings.Split(s[:i], " ")
		if len(words) == 3 || len(words) > 3 && looksLikeTime(s[i+2:]) {
			words[len(words)-2], words[len(words)-1] = "-", "-"
			s = strings.Join(words, " ") + s[i:]
		}
	}
	for i := 0; ; {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			return s
		}
		start := i + j + 3
		end := start + strings.IndexAny(s[start:]+" ", " \t\"/")
		if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
			s = s[:start] + s[start+at+1:]
		}
		i = start
	}
}

// looksLikeTime reports whether s starts as the time of a Common Log
// Format line does after its "[": a day of the month, then a slash.
func looksLikeTime(s string) bool {
	day, _, ok := strings.Cut(s, "/")
	return ok && len(day) >= 1 && len(day) <= 2 && strings.Trim(day, "0123456789") == ""
}

// cut cuts s to at most max bytes on a rune boundary, marking the cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
