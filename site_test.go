package logtally

import (
	"testing"
)

func TestNormalizeSite(t *testing.T) {
	tests := []struct{ host, want string }{
		{"example.org", "example.org"},
		{"Example.ORG", "example.org"},
		{"example.org:8080", "example.org"},
		{"example.org.", "example.org"},
		{"example.org.:443", "example.org"},
		{"example.org:", "example.org"},
		{"[2001:DB8::1]:443", "[2001:db8::1]"},
		{"[2001:db8::1]", "[2001:db8::1]"},
		{"2001:db8::1", "2001:db8::1"},
		{"192.0.2.7:80", "192.0.2.7"},
		{"", DefaultSite},
		{"-", DefaultSite},
		{".", DefaultSite},
		{"(all)", DefaultSite},
		{"(other)", DefaultSite},
		{"evil host", DefaultSite},
		{"a/b", DefaultSite},
		{"caf\xc3\xa9.example", DefaultSite},
		{string(make([]byte, 254)), DefaultSite},
		{"example.org:http", DefaultSite},
	}
	for _, tt := range tests {
		got := string(NormalizeSite(nil, []byte(tt.host)))
		if got != tt.want {
			t.Errorf("NormalizeSite(%q) = %q, want %q", tt.host, got, tt.want)
		}
		if !ValidSite(got) {
			t.Errorf("NormalizeSite(%q) = %q, which ValidSite refuses", tt.host, got)
		}
	}
}

func TestValidSite(t *testing.T) {
	for name, want := range map[string]bool{
		"example.org": true, DefaultSite: true, OtherSite: true, AllSites: true,
		"": false, "Example.org": false, "a b": false, "(x)": false,
	} {
		if got := ValidSite(name); got != want {
			t.Errorf("ValidSite(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestNormalizeSiteAllocs(t *testing.T) {
	buf := make([]byte, 0, MaxSiteName)
	host := []byte("WWW.Example.org:8443")
	if n := testing.AllocsPerRun(100, func() { buf = NormalizeSite(buf[:0], host) }); n != 0 {
		t.Fatalf("NormalizeSite allocates %v times", n)
	}
}

func FuzzNormalizeSite(f *testing.F) {
	for _, s := range []string{"example.org", "[::1]:80", "A.B.:1", "-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		got := NormalizeSite(nil, []byte(host))
		if !ValidSite(string(got)) {
			t.Fatalf("NormalizeSite(%q) = %q, not a valid site", host, got)
		}
		if again := NormalizeSite(nil, got); string(again) != string(got) {
			t.Fatalf("NormalizeSite is not idempotent: %q -> %q -> %q", host, got, again)
		}
	})
}

// A breakdown's site is a valid site name that no host, and no counter,
// can take, and that no test of a counter's site mistakes for one.
func TestBreakdownSite(t *testing.T) {
	for _, name := range []string{"referrer", "utm-campaign", "not-found", "os"} {
		site := BreakdownSite(name)
		if !ValidSite(site) {
			t.Errorf("ValidSite(%q) = false, want true", site)
		}
		if got := string(NormalizeSite(nil, []byte(site))); got == site {
			t.Errorf("NormalizeSite(%q) = %q: a host can name a breakdown's site", site, got)
		}
		if !IsBreakdownSite(site) || IsCounterSite(site) || !IsDimensionSite(site) {
			t.Errorf("%q: IsBreakdownSite %v, IsCounterSite %v, IsDimensionSite %v; want true, false, true",
				site, IsBreakdownSite(site), IsCounterSite(site), IsDimensionSite(site))
		}
	}
	for _, site := range []string{"breakdown:", "breakdown", DefaultSite, CounterSite("referrer"), "breakdown.example"} {
		if IsBreakdownSite(site) {
			t.Errorf("IsBreakdownSite(%q) = true, want false", site)
		}
	}
}
