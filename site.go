package logtally

// Sites. Every line belongs to one site: the virtual host it was served
// for, or the site its file is mapped to. A site's name is a host name as
// NormalizeSite makes it; the names in parentheses cannot be one, so they
// never collide with a real host.
const (
	// DefaultSite is the site of lines that name none: with no site
	// mapping, every line; with one, lines whose host is empty, "-" or not
	// a host name.
	DefaultSite = "default"
	// OtherSite gathers the lines of sites first seen once the most sites
	// kept are already counted: a flood of random Host headers adds one
	// site, not one per header.
	OtherSite = "(other)"
	// AllSites is the all-sites view of a store that counts several sites:
	// every line counted once more, so that a visitor of two sites is one
	// visitor of all of them.
	AllSites = "(all)"
)

// MaxSiteName is the longest site name: the longest DNS name.
const MaxSiteName = 253

// SiteCount is one site's live window, as GET /api/v1/sites lists it.
type SiteCount struct {
	Site      string
	Visitors  int64
	PageViews int64
	Requests  int64
}

// ValidSite reports whether name can name a stored site: a name
// NormalizeSite gives, or one of the reserved names.
func ValidSite(name string) bool {
	if name == OtherSite || name == AllSites {
		return true
	}
	if len(name) == 0 || len(name) > MaxSiteName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !hostByte(name[i]) || name[i] >= 'A' && name[i] <= 'Z' {
			return false
		}
	}
	return true
}

// hostByte reports whether c may appear in a site name: the letters,
// digits and punctuation of DNS names, and the brackets and colons of an
// IPv6 literal.
func hostByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '.', '-', '_', '[', ']', ':':
		return true
	}
	return false
}

// NormalizeSite appends to dst the site name of a host as a log line
// writes it (nginx $host or $server_name, Apache %v or %{Host}i): lower
// case, without a port and without a trailing dot, so that Example.org,
// example.org:443 and example.org. are one site. An IPv6 literal keeps its
// brackets ([2001:db8::1]). A host that is empty, "-", longer than
// MaxSiteName or holds a byte no host name has gives DefaultSite. It
// allocates nothing when dst has room.
func NormalizeSite(dst, host []byte) []byte {
	if len(host) > 0 && host[0] == '[' {
		// [v6]:port: the port follows the closing bracket.
		for i := 1; i < len(host); i++ {
			if host[i] == ']' {
				host = host[:i+1]
				break
			}
		}
	} else if i := lastColon(host); i >= 0 && onlyDigits(host[i+1:]) && firstColon(host) == i {
		// One colon: host:port. More are an IPv6 address without brackets.
		host = host[:i]
	}
	for len(host) > 0 && host[len(host)-1] == '.' {
		host = host[:len(host)-1]
	}
	if len(host) == 0 || len(host) > MaxSiteName || len(host) == 1 && host[0] == '-' {
		return append(dst, DefaultSite...)
	}
	for _, c := range host {
		if !hostByte(c) {
			return append(dst, DefaultSite...)
		}
	}
	if host[0] != '[' && firstColon(host) >= 0 && firstColon(host) == lastColon(host) {
		return append(dst, DefaultSite...) // host:something that is no port
	}
	n := len(dst)
	dst = append(dst, host...)
	for i := n; i < len(dst); i++ {
		if c := dst[i]; c >= 'A' && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}

func lastColon(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ':' {
			return i
		}
	}
	return -1
}

func firstColon(b []byte) int {
	for i, c := range b {
		if c == ':' {
			return i
		}
	}
	return -1
}

func onlyDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// counterSitePrefix starts the name of a counter's site: a host name has
// no "counter:" (NormalizeSite drops a colon followed by anything but a
// port), so it collides with no real site.
const counterSitePrefix = "counter:"

// CounterSite returns the name of the site a named counter is counted as:
// its paths are the counter's keys.
func CounterSite(counter string) string { return counterSitePrefix + counter }

// IsCounterSite reports whether a site name is a counter's.
func IsCounterSite(site string) bool {
	return len(site) > len(counterSitePrefix) && site[:len(counterSitePrefix)] == counterSitePrefix
}

// breakdownSitePrefix starts the name of a breakdown's site: like
// counterSitePrefix, it collides with no real site, nor with a counter's.
const breakdownSitePrefix = "breakdown:"

// BreakdownSite returns the name of the site a breakdown (referrer,
// browser, status...) is counted as: its paths are the breakdown's keys,
// as a named counter's are.
func BreakdownSite(breakdown string) string { return breakdownSitePrefix + breakdown }

// IsBreakdownSite reports whether a site name is a breakdown's.
func IsBreakdownSite(site string) bool {
	return len(site) > len(breakdownSitePrefix) && site[:len(breakdownSitePrefix)] == breakdownSitePrefix
}

// IsDimensionSite reports whether a site name is a named counter's or a
// breakdown's: a dimension of lines counted in a site of their own too,
// whose history is no site's.
func IsDimensionSite(site string) bool { return IsCounterSite(site) || IsBreakdownSite(site) }
