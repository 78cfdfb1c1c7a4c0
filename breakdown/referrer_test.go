package breakdown

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/logtally/logtally"
)

func TestRefHost(t *testing.T) {
	tests := []struct {
		ref  string
		want string // "" with res
		res  hostResult
	}{
		{"", "", hostNone},
		{"-", "", hostNone},
		{"https://www.google.com/", "google.com", hostOK},
		{"https://www.google.com/search?q=my+name+is+alice", "google.com", hostOK},
		{"http://Example.COM:8080/a/b?c=d#e", "example.com", hostOK},
		{"https://alice:secret@example.com/private", "example.com", hostOK},
		{"https://user@www.example.org", "example.org", hostOK},
		{"https://example.com.", "example.com", hostOK},
		{"https://www.com/", "www.com", hostOK},
		{"https://www.www.example.com/", "example.com", hostOK},
		{"https://news.ycombinator.com", "news.ycombinator.com", hostOK},
		{"android-app://com.google.android.gm/", "com.google.android.gm", hostOK},
		{"example.com/page", "example.com", hostOK},
		{"HTTPS://WWW.EXAMPLE.COM", "example.com", hostOK},
		{"http://198.51.100.7:81/x", "198.51.100.7", hostOK},
		{"http://[2001:DB8::1]:8080/x", "[2001:db8::1]", hostOK},
		{"http://[2001:db8::1]/", "[2001:db8::1]", hostOK},
		{"http://my_host.local/", "my_host.local", hostOK},
		{"https://example.com?q=1", "example.com", hostOK},
		{"https://example.com\\@evil.com/", "example.com", hostOK},
		{"/relative/path", "", hostInvalid},
		{"http://", "", hostInvalid},
		{"http:///path", "", hostInvalid},
		{"http://exa mple.com/", "", hostInvalid},
		{"http://caf\xc3\xa9.fr/", "", hostInvalid},
		{"http://%65xample.com/", "", hostInvalid},
		{"http://a..b/", "", hostInvalid},
		{"http://.example.com/", "", hostInvalid},
		{"http://[::1/", "", hostInvalid},
		{"http://[::1]x/", "", hostInvalid},
		{"http://[]/", "", hostInvalid},
		{"http://[g::1]/", "", hostInvalid},
		{"http://a]b/", "", hostInvalid},
		{"http://...", "", hostInvalid},
		{"-#", "", hostInvalid},
		{"http://-a.com/", "", hostInvalid},
		{"http://a-.com/", "", hostInvalid},
		{"http://a-b.com/", "a-b.com", hostOK},
		{"http://" + string(bytes.Repeat([]byte("a"), 64)) + ".com/", "", hostInvalid},
		{"http://" + string(bytes.Repeat([]byte("abcdefghi."), 26)) + "com/", "", hostInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			prefix := []byte("kept|")
			got, res := appendRefHost(bytes.Clone(prefix), []byte(tt.ref))
			if res != tt.res || string(got) != string(prefix)+tt.want {
				t.Errorf("appendRefHost(%q) = %q, %d; want %q, %d", tt.ref, got, res, string(prefix)+tt.want, tt.res)
			}
		})
	}
}

func TestChannel(t *testing.T) {
	tests := []struct{ host, want string }{
		{"google.com", ChannelSearch},
		{"google.co.uk", ChannelSearch},
		{"google.com.au", ChannelSearch},
		{"news.google.de", ChannelSearch},
		{"mail.google.com", ChannelOther},
		{"google.example.org", ChannelOther},
		{"notgoogle.com", ChannelOther},
		{"com.google.android.gm", ChannelOther},
		{"bing.com", ChannelSearch},
		{"cn.bing.com", ChannelSearch},
		{"duckduckgo.com", ChannelSearch},
		{"search.yahoo.com", ChannelSearch},
		{"uk.search.yahoo.com", ChannelSearch},
		{"mail.yahoo.com", ChannelOther},
		{"baidu.com", ChannelSearch},
		{"m.baidu.com", ChannelSearch},
		{"yandex.ru", ChannelSearch},
		{"yandex.com.tr", ChannelSearch},
		{"ya.ru", ChannelSearch},
		{"ecosia.org", ChannelSearch},
		{"qwant.com", ChannelSearch},
		{"startpage.com", ChannelSearch},
		{"search.brave.com", ChannelSearch},
		{"brave.com", ChannelOther},
		{"facebook.com", ChannelSocial},
		{"l.facebook.com", ChannelSocial},
		{"m.facebook.com", ChannelSocial},
		{"x.com", ChannelSocial},
		{"t.co", ChannelSocial},
		{"twitter.com", ChannelSocial},
		{"linkedin.com", ChannelSocial},
		{"lnkd.in", ChannelSocial},
		{"old.reddit.com", ChannelSocial},
		{"news.ycombinator.com", ChannelSocial},
		{"ycombinator.com", ChannelOther},
		{"instagram.com", ChannelSocial},
		{"youtube.com", ChannelSocial},
		{"pinterest.com", ChannelSocial},
		{"pinterest.fr", ChannelSocial},
		{"mastodon.social", ChannelSocial},
		{"mstdn.jp", ChannelSocial},
		{"bsky.app", ChannelSocial},
		{"example.com", ChannelOther},
		{"semicomplete.com", ChannelOther},
		{"198.51.100.7", ChannelOther},
		{"[2001:db8::1]", ChannelOther},
		{"localhost", ChannelOther},
		{"google", ChannelOther},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := channel([]byte(tt.host)); got != tt.want {
				t.Errorf("channel(%q) = %q, want %q", tt.host, got, tt.want)
			}
		})
	}
}

func TestTopLevel(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"com", true}, {"de", true}, {"co.uk", true}, {"com.au", true},
		{"", false}, {"c", false}, {"info", false}, {"co.uk.x", false}, {"a.b.c", false}, {"example.org", false}, {"c0m", false},
	}
	for _, tt := range tests {
		if got := topLevel([]byte(tt.s)); got != tt.want {
			t.Errorf("topLevel(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestOwnHost(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"example.com", "example.com", true},
		{"WWW.Example.com", "example.com", true},
		{"example.com:8443", "example.com", true},
		{"[2001:db8::1]", "[2001:db8::1]", true},
		{"", "", false},
		{"https://example.com", "", false},
		{"example.com/blog", "", false},
		{"user@example.com", "", false},
		{"exa mple.com", "", false},
	}
	for _, tt := range tests {
		got, ok := ownHost(tt.in)
		if string(got) != tt.want || ok != tt.ok {
			t.Errorf("ownHost(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzRefHost checks that whatever a Referer holds, its host is a
// bounded, normalized host name or address, in the escaped form of text
// unchanged (so it needs no escape), which never holds a path, a query or
// a user, and that its channel can be told.
func FuzzRefHost(f *testing.F) {
	for _, s := range []string{"", "-", "https://www.google.com/search?q=x", "http://user:pw@[::1]:80/p", "example.com",
		"android-app://com.google.android.gm/", "http://a..b", "http://\xff/"} {
		f.Add([]byte(s))
	}
	for _, s := range sampleReferrers(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ref []byte) {
		got, res := appendRefHost(nil, ref)
		switch res {
		case hostNone, hostInvalid:
			if len(got) != 0 {
				t.Fatalf("appendRefHost(%q) = %q with result %d", ref, got, res)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxHost || logtally.NeedsEscape(got) || !utf8.Valid(got) {
			t.Fatalf("appendRefHost(%q) = %q", ref, got)
		}
		if bytes.ContainsAny(got, "/?#@ %ABCDEFGHIJKLMNOPQRSTUVWXYZ") || bytes.HasPrefix(got, []byte("www.")) && bytes.Count(got, []byte(".")) > 1 {
			t.Fatalf("appendRefHost(%q) = %q: not normalized", ref, got)
		}
		again, res2 := appendRefHost(nil, got)
		if res2 != hostOK || !bytes.Equal(again, got) {
			t.Fatalf("host %q of %q normalizes again to %q, %d", got, ref, again, res2)
		}
		switch channel(got) {
		case ChannelSearch, ChannelSocial, ChannelOther:
		default:
			t.Fatalf("channel(%q) = %q", got, channel(got))
		}
	})
}
