package logtally

import (
	"encoding/binary"
	"unicode/utf8"
)

// Text taken from a log line (a path, a counter's key) may hold any bytes:
// nginx writes a raw byte of a request as \xHH, and the parser decodes it,
// so "GET /caf\xE9" has the path "/caf" followed by the byte 0xE9, which is
// not UTF-8. PostgreSQL refuses such text and JSON cannot show it, so every
// such text is held in one form, the same in the local store, the fleet
// database and the API: valid UTF-8 in which every byte that is not part of
// a valid UTF-8 sequence, every control byte (below 0x20, and 0x7F) and the
// backslash itself are written \xHH, upper-case hex, as nginx writes them.
// So a path reads as it does in the log, and the form is unambiguous and
// lossless: a backslash always starts an escape (a literal "\xE9" in a URL
// is "\x5CxE9"), and UnescapeText gives back the bytes.

// NeedsEscape reports whether b is not already in the escaped form of
// text: AppendEscaped would change it. It does not allocate. It takes eight
// bytes at a time, the last eight overlapping the word before, and tests
// them all at once, since nearly every path is printable ASCII; only a
// path that may not be is looked at byte by byte.
func NeedsEscape(b []byte) bool {
	n := len(b)
	if n < 8 {
		for _, c := range b {
			if !printable[c] {
				return needsEscapeSlow(b)
			}
		}
		return false
	}
	var acc uint64
	for i := 0; i < n-8; i += 8 {
		acc |= suspect(binary.LittleEndian.Uint64(b[i:]))
	}
	if (acc|suspect(binary.LittleEndian.Uint64(b[n-8:])))&0x8080808080808080 == 0 {
		return false
	}
	return needsEscapeSlow(b)
}

// suspect returns w with the high bit of each byte set that may need an
// escape: a byte of 0x80 or more, which the exact test decodes, a control
// byte or a backslash (and maybe bytes after one, which the exact test
// clears). While every byte is below 0x80 no sum carries into the next
// byte: a byte below 0x20 leaves its high bit clear in w+0x60, 0x7F sets it
// in w+1, and a backslash, a zero byte of w^'\\'s, borrows into it in that
// minus 1.
func suspect(w uint64) uint64 {
	const ones = 0x0101010101010101
	return w | ^(w + 0x6060606060606060) | (w + ones) | ((w ^ 0x5c5c5c5c5c5c5c5c) - ones)
}

// printable has the bytes that text holds as they are, one at a time:
// printable ASCII but the backslash.
var printable = func() (p [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		p[c] = c != '\\'
	}
	return p
}()

// needsEscapeSlow is NeedsEscape byte by byte, for text that is not all
// printable ASCII: valid UTF-8 beyond ASCII needs no escape.
func needsEscapeSlow(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return true
		}
		i += size
	}
	return false
}

// AppendEscaped appends b to dst in the escaped form of text (see
// NeedsEscape); the result is always valid UTF-8.
func AppendEscaped(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x20 && c < 0x7f && c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		size := 1
		if c >= utf8.RuneSelf {
			if r, n := utf8.DecodeRune(b[i:]); r != utf8.RuneError || n > 1 {
				size = n
			}
		}
		if size > 1 {
			dst = append(dst, b[i:i+size]...)
		} else {
			dst = append(dst, '\\', 'x', upperHex[c>>4], upperHex[c&0xf])
		}
		i += size
	}
	return dst
}

const upperHex = "0123456789ABCDEF"

// UnescapeText returns the bytes that text in the escaped form stands for:
// each \xHH is the byte HH. Anything else, which the escaped form never
// holds (a backslash not followed by x and two hex digits), is kept as it
// is.
func UnescapeText(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			hi, ok1 := HexDigit(s[i+2])
			lo, ok2 := HexDigit(s[i+3])
			if ok1 && ok2 {
				out = append(out, hi<<4|lo)
				i += 3
				continue
			}
		}
		out = append(out, s[i])
	}
	return out
}

// HexDigit returns the value of a hex digit, either case, and whether c is
// one: what decodes a \xHH here and a %HH in a query (package breakdown).
func HexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
