package breakdown

import (
	"errors"
	"net/netip"
	"testing"
)

// testNetworks are the networks of the test database: one /24 network
// split in two /25s of two countries, which the cache must not take for
// one, and a record with only a registered country.
var testNetworks = map[string]string{
	"81.2.69.0/24":      "GB",
	"198.18.0.0/16":     "FR",
	"198.19.0.0/16":     "DE",
	"203.0.113.0/25":    "AU",
	"203.0.113.128/25":  "NZ",
	"192.0.2.0/24":      "registered:SE",
	"198.51.100.0/24":   "xx", // not a country code
	"2001:db8:1::/48":   "DE",
	"2001:db8:2::/47":   "JP",
	"2001:db8:100::/56": "CA",
}

func TestCountry(t *testing.T) {
	d := newDeriver(t, Config{Breakdowns: []string{"country"}, GeoIP: countryDB(t, testNetworks)})
	tests := []struct{ host, want string }{
		{"81.2.69.160", "GB"},
		{"81.2.69.1", "GB"},
		{"198.18.0.1", "FR"},
		{"198.19.255.254", "DE"},
		{"203.0.113.1", "AU"},
		{"203.0.113.200", "NZ"},
		{"203.0.113.2", "AU"},
		{"192.0.2.7", "SE"},
		{"198.51.100.7", Unknown},
		{"::ffff:81.2.69.5", "GB"},
		{"2001:db8:1::1", "DE"},
		{"2001:DB8:1:ffff::1", "DE"},
		{"2001:db8:3:1::1", "JP"},
		{"2001:db8:100::1", "CA"},
		{"2001:db8:100:100::1", Unknown},
		{"8.8.8.8", Unknown},
		{"fe80::1%eth0", Unknown},
		{"example.com", Unknown},
		{"1.2.3", Unknown},
		{"", Unknown},
		{"-", Unknown},
	}
	// Twice through one memo: the second time from the cache.
	var m Memo
	for pass := range 2 {
		for _, tt := range tests {
			var k Keys
			d.Derive(line{host: tt.host}.record(), &m, &k)
			if got, ok := k.Key(Country); !ok || string(got) != tt.want {
				t.Errorf("pass %d: country of %q = %q, %v; want %q", pass, tt.host, got, ok, tt.want)
			}
		}
	}
}

// TestCountryCache checks that the cache holds networks, not addresses:
// the addresses of a /24 are one entry, those of a smaller network none.
func TestCountryCache(t *testing.T) {
	d := newDeriver(t, Config{Breakdowns: []string{"country"}, GeoIP: countryDB(t, testNetworks)})
	var m Memo
	var k Keys
	for _, h := range []string{"81.2.69.1", "81.2.69.2", "81.2.69.3", "198.18.0.1", "198.18.0.2", "203.0.113.1", "203.0.113.200",
		"2001:db8:1::1", "2001:db8:1::2", "2001:db8:100::1"} {
		d.Derive(line{host: h}.record(), &m, &k)
	}
	// 81.2.69/24, 198.18.0/24 and 2001:db8:1::/48; not 203.0.113/24,
	// whose countries are /25s, nor 2001:db8:100::/48, split in /56s.
	if got, want := m.nets.len(), 3; got != want {
		t.Errorf("%d networks remembered, want %d", got, want)
	}
	r := line{host: "81.2.69.77"}.record()
	if n := testing.AllocsPerRun(100, func() { d.Derive(r, &m, &k) }); n != 0 {
		t.Errorf("a remembered network allocates %v times", n)
	}
}

func TestGeoIPErrors(t *testing.T) {
	tests := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"missing", func(t *testing.T) string { return t.TempDir() + "/none.mmdb" }},
		{"not a database", func(t *testing.T) string { return "../testdata/sample.log" }},
		{"no countries", func(t *testing.T) string { return writeDB(t, "GeoLite2-ASN", map[string]string{"81.2.69.0/24": "GB"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Breakdowns: []string{"country"}, GeoIP: tt.path(t)}, Deps{})
			if !errors.Is(err, ErrGeoIP) {
				t.Errorf("New = %v, want %v", err, ErrGeoIP)
			}
		})
	}
}

// TestNoGeoIP checks that without a database there is no country, and
// the rest is derived.
func TestNoGeoIP(t *testing.T) {
	d := newDeriver(t, Config{Breakdowns: []string{"country", "status"}})
	if d.On(Country) {
		t.Error("country is on without a database")
	}
	var k Keys
	d.Derive(line{host: "81.2.69.1", status: 200}.record(), new(Memo), &k)
	if got, ok := k.Key(Country); ok {
		t.Errorf("country = %q without a database", got)
	}
	if got, _ := k.Key(Status); string(got) != "200" {
		t.Errorf("status = %q, want 200", got)
	}
}

func TestNetKey(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"81.2.69.1", "81.2.69.254", true},
		{"81.2.69.1", "81.2.70.1", false},
		{"2001:db8:1::1", "2001:db8:1:ffff::2", true},
		{"2001:db8:1::1", "2001:db8:2::1", false},
		{"0.0.0.1", "::1", false},
		{"0.0.0.0", "::", false},
	}
	for _, tt := range tests {
		ka, _ := netKey(netip.MustParseAddr(tt.a))
		kb, _ := netKey(netip.MustParseAddr(tt.b))
		if (ka == kb) != tt.same || ka == 0 || kb == 0 {
			t.Errorf("netKey(%s) = %x, netKey(%s) = %x; want same %v", tt.a, ka, tt.b, kb, tt.same)
		}
	}
}

func TestParseIPv4(t *testing.T) {
	for _, s := range []string{"1.2.3.4", "0.0.0.0", "255.255.255.255", "198.18.0.1", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4",
		"1.2.3.04", "0.10.100.0", "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.4a", "", "::1", "::ffff:1.2.3.4", "1.2.3.-4", "1234.1.1.1"} {
		got, ok := parseIPv4([]byte(s))
		want, err := netip.ParseAddr(s)
		if wantOK := err == nil && want.Is4(); ok != wantOK || ok && got != want.As4() {
			t.Errorf("parseIPv4(%q) = %v, %v; netip says %v, %v", s, got, ok, want, err)
		}
	}
}

// FuzzCountry checks that whatever a client address field holds, the
// cache answers as the database does, the first time and the next, and
// that IPv4 addresses are read as netip reads them.
func FuzzCountry(f *testing.F) {
	for _, s := range []string{"81.2.69.1", "203.0.113.200", "2001:db8:1::1", "::ffff:81.2.69.5", "fe80::1%eth0", "01.2.3.4", "-", ""} {
		f.Add([]byte(s))
	}
	for _, r := range blogLines(f)[:20] {
		f.Add(r.Host)
	}
	path := countryDB(f, testNetworks)
	db, err := openGeoIP(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	var c netCache
	f.Fuzz(func(t *testing.T, host []byte) {
		if a, ok := parseIPv4(host); ok {
			if want, err := netip.ParseAddr(string(host)); err != nil || want.As4() != a {
				t.Fatalf("parseIPv4(%q) = %v; netip: %v, %v", host, a, want, err)
			}
		}
		var want [2]byte
		if addr, err := netip.ParseAddr(string(host)); err == nil && addr.Zone() == "" {
			var cc string
			if db.Lookup(addr.Unmap()).DecodePath(&cc, "country", "iso_code") == nil && isCountryCode(cc) {
				want = [2]byte{cc[0], cc[1]}
			}
			if reg := ""; want == ([2]byte{}) && db.Lookup(addr.Unmap()).DecodePath(&reg, "registered_country", "iso_code") == nil && isCountryCode(reg) {
				want = [2]byte{reg[0], reg[1]}
			}
		}
		for i := range 2 {
			if got := c.country(db, host); got != want {
				t.Fatalf("country %d of %q = %q, want %q", i, host, got[:], want[:])
			}
		}
	})
}
