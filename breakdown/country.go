package breakdown

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unsafe"

	"github.com/oschwald/maxminddb-golang/v2"
)

// ErrGeoIP means the --geoip file cannot be read as a country database.
var ErrGeoIP = errors.New("not a country database")

// openGeoIP opens the MaxMind-format database at path, and checks that it
// can tell countries: its type names countries or cities (GeoLite2-Country,
// GeoLite2-City, DBIP-Country-Lite, GeoIP2-Country, ...).
func openGeoIP(path string) (*maxminddb.Reader, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--geoip %s: %w: %w", path, ErrGeoIP, err)
	}
	t := strings.ToLower(r.Metadata.DatabaseType)
	if !strings.Contains(t, "country") && !strings.Contains(t, "city") {
		r.Close()
		return nil, fmt.Errorf("--geoip %s: %w: its type is %q; give a GeoLite2-Country or DB-IP Lite country database",
			path, ErrGeoIP, r.Metadata.DatabaseType)
	}
	return r, nil
}

// The network cache remembers the country of the client networks seen
// lately, for one goroutine: netSets sets of netWays networks, 64 KiB. A
// network is the /24 of an IPv4 address or the /48 of an IPv6 one, what
// one customer of a provider gets; a country database's networks are
// rarely smaller, and a lookup whose network is is not remembered. So the
// cache holds no address, only networks, and a flood of addresses costs a
// lookup each in bounded memory.
const (
	netSets = 1024
	netWays = 4
	// maxRecords is the most database records whose country a cache
	// remembers: a country database has a few hundred.
	maxRecords = 1024
)

// netEntry is one remembered network: key is its network with netKeyTag
// set (so the zero entry is empty), cc its country, zero for Unknown. It
// holds no pointer, so the table costs the collector nothing.
type netEntry struct {
	key uint64
	cc  [2]byte
}

const (
	netKeyTag = 1 << 62 // in every key, so that no key is 0
	netKeyV4  = 1 << 61 // in the keys of IPv4 networks
)

// netCache remembers networks' countries, and records' countries by
// their offset in the database. Its zero value is ready.
type netCache struct {
	db      *maxminddb.Reader // the database the cache is of
	sets    *[netSets][netWays]netEntry
	records map[uintptr][2]byte
}

// country returns the country of the client address host (as the line
// wrote it), or zero when it cannot be told. An IPv4 address, nearly
// every client's, is read here straight into its network's key; netip
// reads the others.
func (c *netCache) country(db *maxminddb.Reader, host []byte) [2]byte {
	var addr netip.Addr
	var key uint64
	var bits int
	if a, ok := parseIPv4(host); ok {
		addr, key, bits = netip.AddrFrom4(a), netKey4(a), 24
	} else {
		if !addrText(host) {
			return [2]byte{}
		}
		// ParseAddr keeps nothing of its argument but a zone, and there
		// is none, so the line's bytes are lent to it rather than copied.
		var err error
		if addr, err = netip.ParseAddr(unsafe.String(unsafe.SliceData(host), len(host))); err != nil {
			return [2]byte{}
		}
		addr = addr.Unmap()
		key, bits = netKey(addr)
	}
	if c.db != db {
		*c = netCache{db: db, sets: new([netSets][netWays]netEntry), records: make(map[uintptr][2]byte)}
	}
	s := &c.sets[(key*0x9E3779B97F4A7C15)>>54%netSets]
	for i := range s {
		if s[i].key == key {
			e := s[i]
			copy(s[1:i+1], s[:i])
			s[0] = e
			return e.cc
		}
	}
	res := db.Lookup(addr)
	cc := c.record(res)
	if p := res.Prefix(); p.IsValid() && p.Addr().Is4() == addr.Is4() && p.Bits() <= bits {
		copy(s[1:], s[:netWays-1])
		s[0] = netEntry{key: key, cc: cc}
	}
	return cc
}

// parseIPv4 reads a dotted-quad IPv4 address as netip does: four decimal
// numbers of 0 to 255, without leading zeros.
func parseIPv4(b []byte) (a [4]byte, ok bool) {
	n, digits, field := 0, 0, 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			if digits == 1 && n == 0 {
				return a, false // a leading zero
			}
			if n = n*10 + int(c-'0'); n > 255 {
				return a, false
			}
			digits++
		case c == '.' && digits > 0 && field < 3:
			a[field] = byte(n)
			n, digits = 0, 0
			field++
		default:
			return a, false
		}
	}
	if digits == 0 || field != 3 {
		return a, false
	}
	a[3] = byte(n)
	return a, true
}

// addrText reports whether host may be an IP address: hex digits, dots
// and colons. Anything else (a host name, an address with a zone, which no
// database holds) would cost netip an error, which allocates.
func addrText(host []byte) bool {
	if len(host) == 0 || len(host) > 45 {
		return false
	}
	for _, c := range host {
		if !('0' <= c && c <= '9' || 'a' <= lower(c) && lower(c) <= 'f' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// netKey4 returns the key of an IPv4 address's /24.
func netKey4(a [4]byte) uint64 {
	return netKeyTag | netKeyV4 | uint64(a[0])<<16 | uint64(a[1])<<8 | uint64(a[2])
}

// netKey returns the key of addr's network and that network's length.
func netKey(addr netip.Addr) (key uint64, bits int) {
	if addr.Is4() {
		return netKey4(addr.As4()), 24
	}
	a := addr.As16()
	return netKeyTag | uint64(a[0])<<40 | uint64(a[1])<<32 | uint64(a[2])<<24 | uint64(a[3])<<16 | uint64(a[4])<<8 | uint64(a[5]), 48
}

// record returns the country of a lookup's record, remembered by the
// record's offset: its country's, else its registered country's (an
// anonymous proxy's or a satellite provider's record has only that).
func (c *netCache) record(res maxminddb.Result) [2]byte {
	if !res.Found() {
		return [2]byte{}
	}
	if cc, ok := c.records[res.Offset()]; ok {
		return cc
	}
	var cc string
	if err := res.DecodePath(&cc, "country", "iso_code"); err != nil || cc == "" {
		cc = ""
		_ = res.DecodePath(&cc, "registered_country", "iso_code")
	}
	var code [2]byte
	if isCountryCode(cc) {
		code = [2]byte{cc[0], cc[1]}
	}
	if len(c.records) < maxRecords {
		c.records[res.Offset()] = code
	}
	return code
}

// isCountryCode reports whether s is two upper-case ASCII letters.
func isCountryCode(s string) bool {
	return len(s) == 2 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z'
}

// len returns how many networks c holds.
func (c *netCache) len() int {
	n := 0
	if c.sets != nil {
		for _, s := range c.sets {
			for _, e := range s {
				if e.key != 0 {
					n++
				}
			}
		}
	}
	return n
}
