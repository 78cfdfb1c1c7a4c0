package breakdown

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestConfigFlags(t *testing.T) {
	tests := []struct {
		args []string
		want Config
	}{
		{nil, DefaultConfig()},
		{[]string{"--breakdowns", "referrer, Browser,status"}, Config{Breakdowns: []string{"referrer", "Browser", "status"}}},
		{[]string{"--breakdowns", ""}, Config{}},
		{[]string{"--geoip", "/var/lib/GeoLite2-Country.mmdb", "--own-hosts", "example.com,www.example.org"},
			Config{Breakdowns: DefaultBreakdowns, GeoIP: "/var/lib/GeoLite2-Country.mmdb", OwnHosts: []string{"example.com", "www.example.org"}}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			var got Config
			got.RegisterFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Breakdowns, tt.want.Breakdowns) || got.GeoIP != tt.want.GeoIP || !slices.Equal(got.OwnHosts, tt.want.OwnHosts) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // in the error, each; none: valid
	}{
		{"defaults", DefaultConfig(), nil},
		{"all", Config{Breakdowns: names[:]}, nil},
		{"none", Config{}, nil},
		{"unknown", Config{Breakdowns: []string{"referrer", "brwoser", "city"}},
			[]string{`--breakdowns "brwoser": unknown breakdown; choose from referrer, channel,`, `--breakdowns "city"`}},
		{"geoip without country", Config{Breakdowns: []string{"status"}, GeoIP: "x.mmdb"},
			[]string{"--geoip x.mmdb: --breakdowns has no country; add country to --breakdowns, or drop --geoip"}},
		{"own host", Config{OwnHosts: []string{"example.com", "https://example.org/"}},
			[]string{`--own-hosts "https://example.org/": not a host name; give names such as example.com`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %v, want it to say %q", err, w)
				}
			}
			if _, err := New(tt.cfg, Deps{}); err == nil {
				t.Error("New accepts what Validate refuses")
			}
		})
	}
}

func TestBreakdownNames(t *testing.T) {
	for _, b := range All() {
		got, ok := Parse(b.String())
		if !ok || got != b {
			t.Errorf("Parse(%q) = %v, %v", b.String(), got, ok)
		}
	}
	if _, ok := Parse("nope"); ok {
		t.Error(`Parse("nope") succeeds`)
	}
	if got := Breakdown(200).String(); got != "breakdown(200)" {
		t.Errorf("String = %q", got)
	}
	for _, n := range DefaultBreakdowns {
		if _, ok := Parse(n); !ok {
			t.Errorf("default %q is no breakdown", n)
		}
	}
}
