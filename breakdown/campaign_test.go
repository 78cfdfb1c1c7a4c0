package breakdown

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/logtally/logtally"
)

func TestCampaign(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		query        string
		source, name string // "<none>" for no key
	}{
		{"", "<none>", "<none>"},
		{"a=1&b=2", "<none>", "<none>"},
		{"utm_source=newsletter", "newsletter", "<none>"},
		{"utm_source=newsletter&utm_campaign=may", "newsletter", "may"},
		{"x=1;utm_campaign=Spring+Sale;utm_source=Mastodon", "Mastodon", "Spring Sale"},
		{"UTM_SOURCE=feed", "feed", "<none>"},
		{"utm_source=first&utm_source=second", "first", "<none>"},
		{"utm_source=&utm_campaign=c", "<none>", "c"},
		{"utm_source", "<none>", "<none>"},
		{"utm_sourcex=a&xutm_source=b", "<none>", "<none>"},
		{"utm_source=caf%C3%A9", "café", "<none>"},
		{"utm_source=a%2", "a%2", "<none>"},
		{"utm_source=100%25", "100%", "<none>"},
		{"utm_source=%zz", "%zz", "<none>"},
		{"utm_source=a%0Ab", `a\x0Ab`, "<none>"},
		{"utm_source=back%5Cslash", `back\x5Cslash`, "<none>"},
		{"utm_source=%FF", `\xFF`, "<none>"},
		{"utm_source=" + long, long[:MaxCampaign], "<none>"},
		// A cut never splits a character: é is two bytes at 63 and 64.
		{"utm_source=" + long[:MaxCampaign-1] + "%C3%A9", long[:MaxCampaign-1], "<none>"},
		{"utm_source=" + long[:MaxCampaign-2] + "%C3%A9", long[:MaxCampaign-2] + "é", "<none>"},
	}
	d := newDeriver(t, Config{Breakdowns: []string{"utm-source", "utm-campaign"}})
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var k Keys
			d.Derive(line{query: tt.query}.record(), new(Memo), &k)
			for _, c := range []struct {
				b    Breakdown
				want string
			}{{UTMSource, tt.source}, {UTMCampaign, tt.name}} {
				got, ok := k.Key(c.b)
				if !ok {
					got = []byte("<none>")
				}
				if string(got) != c.want {
					t.Errorf("%s of %q = %q, want %q", c.b, tt.query, got, c.want)
				}
			}
		})
	}
}

func TestCutUTF8(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"ab\u00e9", 3, "ab"},
		{"ab\u00e9", 4, "ab\u00e9"},
		{"a\u20ac", 3, "a"},
		{"ab\xff\xfe", 3, "ab\xff"},
		{"\xe2\x82", 1, "\xe2"},
	}
	for _, tt := range tests {
		if got := cutUTF8([]byte(tt.in), tt.n); string(got) != tt.want {
			t.Errorf("cutUTF8(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// FuzzCampaign checks that whatever a query holds, its campaign values
// are bounded, non-empty and in the escaped form of text.
func FuzzCampaign(f *testing.F) {
	for _, s := range []string{"", "utm_source=a&utm_campaign=b", "utm_source=%C3%A9%", "utm_campaign=" + strings.Repeat("%E2%82%AC", 30),
		"utm_source=%00%5C%FF;utm_campaign=+"} {
		f.Add([]byte(s))
	}
	for i, r := range blogLines(f) {
		if len(r.Query) > 0 && i%10 == 0 {
			f.Add(r.Query)
		}
	}
	f.Fuzz(func(t *testing.T, query []byte) {
		c := scanCampaign(query)
		for _, v := range [][]byte{c.source, c.name} {
			if v == nil {
				continue
			}
			got, ok := appendCampaignValue(nil, v)
			if !ok {
				if len(got) != 0 || len(v) != 0 {
					t.Fatalf("value %q of %q: no key, but %q", v, query, got)
				}
				continue
			}
			raw := logtally.UnescapeText(string(got))
			if len(got) == 0 || len(raw) > MaxCampaign || !utf8.Valid(got) || string(logtally.AppendEscaped(nil, raw)) != string(got) {
				t.Fatalf("value %q of %q = %q", v, query, got)
			}
		}
	})
}
