package logtally

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestAppendEscaped(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"},
		{"/index.html", "/index.html"},
		{"/caf\xe9", `/caf\xE9`},
		{"/café", "/café"},                       // valid UTF-8 stays as it is
		{"/a\x00b", `/a\x00b`},                   // NUL, which PostgreSQL's text cannot hold
		{"/a\tb\r\n\x7f", `/a\x09b\x0D\x0A\x7F`}, // control bytes
		{`/a\xE9`, `/a\x5CxE9`},                  // a literal backslash is escaped, so this is not 0xE9
		{"/\xc3", `/\xC3`},                       // a cut sequence
		{"/\xc3\xa9\xc3", `/é\xC3`},
		{"/\xed\xa0\x80", `/\xED\xA0\x80`}, // a surrogate is not UTF-8
		{"/\xc0\xaf", `/\xC0\xAF`},         // an overlong '/'
		{"/\xef\xbf\xbd", "/\ufffd"},       // U+FFFD itself is valid
		{"/12345678\\", `/12345678\x5C`},   // past a whole word
		{"/1234567\x7f", `/1234567\x7F`},
		{"/1234567\x1f/abc", `/1234567\x1F/abc`},
		{"/abcdefgh/ijklmnop/é/\x01", `/abcdefgh/ijklmnop/é/\x01`},
	}
	for _, tt := range tests {
		got := string(AppendEscaped(nil, []byte(tt.in)))
		if got != tt.want {
			t.Errorf("AppendEscaped(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if need := NeedsEscape([]byte(tt.in)); need != (tt.in != tt.want) {
			t.Errorf("NeedsEscape(%q) = %v, want %v", tt.in, need, tt.in != tt.want)
		}
		if back := UnescapeText(got); string(back) != tt.in {
			t.Errorf("UnescapeText(%q) = %q, want %q", got, back, tt.in)
		}
	}
}

// TestNeedsEscapeEveryByte puts every byte at every position of a word and
// of the tail, with printable ASCII around it.
func TestNeedsEscapeEveryByte(t *testing.T) {
	for c := range 256 {
		for pos := range 19 {
			b := []byte("/abcdefghijklmnopqr")
			b[pos] = byte(c)
			want := c < 0x20 || c >= 0x7f || c == '\\'
			if got := NeedsEscape(b); got != want {
				t.Fatalf("NeedsEscape(%q) = %v, want %v", b, got, want)
			}
		}
	}
}

// FuzzEscape: the escaped form of any bytes is valid UTF-8, NeedsEscape
// says whether it differs from them, and it unescapes back to them.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"/", "/caf\xe9", "/a\x00b", `/a\xE9`, "/é", "/\xc3", "/12345678\x7f\\"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		esc := AppendEscaped(nil, b)
		if !utf8.Valid(esc) {
			t.Fatalf("AppendEscaped(%q) = %q: not UTF-8", b, esc)
		}
		if got, want := NeedsEscape(b), !bytes.Equal(esc, b); got != want {
			t.Fatalf("NeedsEscape(%q) = %v, want %v", b, got, want)
		}
		if back := UnescapeText(string(esc)); !bytes.Equal(back, b) {
			t.Fatalf("UnescapeText(%q) = %q, want %q", esc, back, b)
		}
	})
}

func BenchmarkNeedsEscape(b *testing.B) {
	path := []byte("/blog/2026/11/a-longer-article-title.html")
	b.SetBytes(int64(len(path)))
	b.ReportAllocs()
	for b.Loop() {
		if NeedsEscape(path) {
			b.Fatal("escape")
		}
	}
}
