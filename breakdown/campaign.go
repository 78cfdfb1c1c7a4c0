package breakdown

import (
	"unicode/utf8"

	"github.com/logtally/logtally"
)

// Campaigns. A link put in a newsletter or a post is tagged with
// utm_source and utm_campaign in its query, and every request of it
// carries them. Their values are whatever the link's author wrote (and
// anyone else who writes a URL), so they are kept as written, case and
// all (as Plausible does), but decoded, cut at MaxCampaign bytes and held
// in the escaped form of logtally's text.

// campaign holds the raw (still percent-encoded) values of the utm
// parameters of one query, aliasing it.
type campaign struct {
	source, name []byte
}

// scanCampaign returns the first utm_source and utm_campaign of a query
// string (without its '?'). Parameter names are matched in any ASCII case.
func scanCampaign(query []byte) campaign {
	var c campaign
	for len(query) > 0 && (c.source == nil || c.name == nil) {
		param := query
		if i := indexParamEnd(query); i >= 0 {
			param, query = query[:i], query[i+1:]
		} else {
			query = nil
		}
		name, value := param, []byte{}
		for i, b := range param {
			if b == '=' {
				name, value = param[:i], param[i+1:]
				break
			}
		}
		switch {
		case c.source == nil && equalFold(name, "utm_source"):
			c.source = value
		case c.name == nil && equalFold(name, "utm_campaign"):
			c.name = value
		}
	}
	return c
}

// indexParamEnd returns the index of the '&' or ';' that ends the first
// parameter of q, or -1.
func indexParamEnd(q []byte) int {
	for i, b := range q {
		if b == '&' || b == ';' {
			return i
		}
	}
	return -1
}

// equalFold reports whether b is the lower-case ASCII s in any case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// appendCampaignValue appends the raw query value v to dst, decoded ('+'
// is a space, %HH a byte; a '%' not followed by two hex digits is kept),
// cut at MaxCampaign bytes without splitting a UTF-8 sequence, in the
// escaped form of logtally's text. It reports false, and appends nothing,
// for a value that is empty once decoded.
func appendCampaignValue(dst, v []byte) ([]byte, bool) {
	var buf [MaxCampaign + utf8.UTFMax]byte
	n := 0
	for i := 0; i < len(v) && n < len(buf); i++ {
		c := v[i]
		switch {
		case c == '+':
			c = ' '
		case c == '%' && i+2 < len(v):
			hi, ok1 := logtally.HexDigit(v[i+1])
			lo, ok2 := logtally.HexDigit(v[i+2])
			if ok1 && ok2 {
				c = hi<<4 | lo
				i += 2
			}
		}
		buf[n] = c
		n++
	}
	if n == 0 {
		return dst, false
	}
	return logtally.AppendEscaped(dst, cutUTF8(buf[:n], MaxCampaign)), true
}

// cutUTF8 returns b cut to at most n bytes, without splitting a valid
// UTF-8 sequence: one that the cut would split is left out whole.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	i := 0
	for i < len(b) {
		_, size := utf8.DecodeRune(b[i:])
		if i+size > n {
			break
		}
		i += size
	}
	return b[:i]
}
