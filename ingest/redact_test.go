package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"combined", `203.0.113.77 - alice [21/Nov/2026:12:00:00 +0000] "GET /login?user=alice&password=hunter2 HTTP/1.1" 200 5 "https://bob:pw@www.example.com/?q=secret" "Mozilla/5.0"`,
			`203.0.113.0/24 - - [21/Nov/2026:12:00:00 +0000] "GET /login?… HTTP/1.1" 200 5 "https://www.example.com/?…" "Mozilla/5.0"`},
		{"another format: a virtual host first", `www.example.com:443 203.0.113.77 - alice [21/Nov/2026:12:00:00 +0000] "GET /?a=b HTTP/1.1" 200 5`,
			`www.example.com:443 203.0.113.0/24 - - [21/Nov/2026:12:00:00 +0000] "GET /?… HTTP/1.1" 200 5`},
		{"ipv6", `2001:db8:1234:5678::9 - - [x] "GET /card?n=4111111111111111"`, `2001:db8:1234::/48 - - [x] "GET /card?…"`},
		{"address and port", `upstream 192.0.2.7:8080 failed, client [2001:db8::1]:443`, `upstream 192.0.2.0/24 failed, client [2001:db8::/48]:443`},
		{"address in a URL", `"http://198.51.100.3:81/x?y"`, `"http://198.51.100.0/24/x?…"`},
		{"mapped", `::ffff:192.0.2.99 x`, `192.0.2.0/24 x`},
		{"nothing personal", `garbage without fields, version 1.2 at 12:00`, `garbage without fields, version 1.2 at 12:00`},
		{"not UTF-8", "10.1.2.3 \xff", "10.1.2.0/24 \ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redact([]byte(tt.line), 512); got != tt.want {
				t.Errorf("redact(%q)\n got %q\nwant %q", tt.line, got, tt.want)
			}
		})
	}
	long := strings.Repeat("é", 300)
	if got := redact([]byte(long), 100); len(got) > 100 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("a long line cut to %d bytes: %q", len(got), got)
	}
}

// FuzzRedact: whatever the line, the redacted one is valid UTF-8 within
// the limit, holds no query string, and every address in it is a masked
// network.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{`203.0.113.77 - alice [21/Nov/2026:12:00:00 +0000] "GET /a?b=c HTTP/1.1" 200 5 "-" "-"`,
		"2001:db8::1 x", "http://u:p@192.0.2.1:80/?q", "\xff\x00?", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got := redact(line, MaxSampleSize)
		if !utf8.ValidString(got) || len(got) > MaxSampleSize {
			t.Fatalf("redact = %q: %d bytes, valid %v", got, len(got), utf8.ValidString(got))
		}
		for _, tok := range strings.FieldsFunc(got, func(r rune) bool { return strings.ContainsRune(" \t\"[](),;=?@", r) }) {
			if a, err := netip.ParseAddr(tok); err == nil && !a.Unmap().IsUnspecified() {
				if a.Is4() || a.Is4In6() {
					if a.Unmap().As4()[3] != 0 || !strings.Contains(got, tok+"/24") {
						t.Fatalf("address %s left in %q", tok, got)
					}
				} else if !strings.Contains(got, tok+"/48") {
					t.Fatalf("address %s left in %q", tok, got)
				}
			}
		}
		if i := strings.IndexByte(got, '?'); i >= 0 && !strings.HasPrefix(got[i:], "?…") {
			t.Fatalf("a query string left in %q", got)
		}
	})
}

// splitAt returns a rejected line whose IPv6 address straddles byte n,
// after a query string long enough that the address would be in what
// redact keeps of the line's first n bytes.
func splitAt(n int) []byte {
	const addr = "2001:db8:1234:5678:9abc:def0:1234:5678"
	prefix := `GET /x?q=` + strings.Repeat("a", n-len(`GET /x?q=`)-1-20) + " "
	return []byte(prefix + addr + ` "-" 200`)
}

// TestRejectedLinesKept: the samples and the log's rejected lines are
// redacted, however long the line, unless --show-rejected-lines keeps the
// samples whole; the log's are redacted even then, and with --no-samples.
func TestRejectedLinesKept(t *testing.T) {
	errBad := errors.New("line does not match format")
	secret := []byte(`203.0.113.77 - alice [21/Nov/2026:12:00:00 +0000] "GET /login?password=hunter2&card=4111111111111111 HTTP/1.1" 200 5`)
	tests := []struct {
		name        string
		off, whole  bool
		line        []byte
		sample, log string // what they hold; "" for the sample: none kept
	}{
		{"redacted", false, false, secret,
			`203.0.113.0/24 - - [21/Nov/2026:12:00:00 +0000] "GET /login?… HTTP/1.1" 200 5`,
			`203.0.113.0/24 - - [21/Nov/2026:12:00:00 +0000] "GET /login?… HTTP/1.1" 200 5`},
		{"whole", false, true, secret, string(secret),
			`203.0.113.0/24 - - [21/Nov/2026:12:00:00 +0000] "GET /login?… HTTP/1.1" 200 5`},
		{"no samples", true, false, secret, "",
			`203.0.113.0/24 - - [21/Nov/2026:12:00:00 +0000] "GET /login?… HTTP/1.1" 200 5`},
		{"an address the sample's cut splits", false, false, splitAt(4 * MaxSampleSize), `GET /x?… `, `GET /x?…`},
		{"an address the log's cut splits", false, false, splitAt(4 * 256), `GET /x?… 2001:db8:1234::/48 "-" 200`, `GET /x?… `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			rj := rejects{off: tt.off, whole: tt.whole, now: time.Now,
				log: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				}}))}
			rj.keep(tt.line, errBad)
			rj.logRejected(tt.line, errBad, 1)
			var got string
			if s := rj.Samples(); len(s) == 1 {
				got = s[0].Line
			} else if len(s) > 1 {
				t.Fatalf("%d samples", len(s))
			}
			if got != tt.sample {
				t.Errorf("sample %q\nwant %q", got, tt.sample)
			}
			var logged struct{ Line string }
			if err := json.Unmarshal(log.Bytes(), &logged); err != nil || logged.Line != tt.log {
				t.Errorf("logged %s (%v)\nwant line %q", log.Bytes(), err, tt.log)
			}
		})
	}
}
