package ingest

import (
	"strings"
	"testing"
)

// TestSuggestAfterCombined: combined lines with one more quoted field are
// advised --format main only when that field reads as an X-Forwarded-For
// list; a host there, which main would read as the forwarded-for list, is
// shown with the format that logs it.
func TestSuggestAfterCombined(t *testing.T) {
	const line = `192.0.2.0/24 - - [21/Nov/2026:12:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "Mozilla/5.0 (X11; Linux x86_64)"`
	tests := []struct {
		name, after  string
		preset       string
		extra        string
		messageParts []string
	}{
		{"forwarded for", ` "203.0.113.0/24, 198.51.100.0/24"`, "main", "", []string{"the rejected lines parse with --format main"}},
		{"no forwarded for", ` "-"`, "main", "", nil},
		{"quoted host", ` "example.org"`, "", ` "example.org"`, []string{
			`combined lines followed by ' "example.org"': give the whole format, such as --format '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$host"' if that is the host`}},
		{"host", ` example.org`, "", ` example.org`, []string{`"$http_user_agent" $host' if that is the host`}},
		{"nothing more", ``, "combined", "", []string{"the rejected lines parse with --format combined"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := []Sample{{Line: line + tt.after}, {Line: line + tt.after}, {Line: "not a line"}}
			preset, extra := suggest(samples)
			if preset != tt.preset || extra != tt.extra {
				t.Errorf("suggest = %q, %q; want %q, %q", preset, extra, tt.preset, tt.extra)
			}
			msg := (&FormatError{Lines: 3, Rejected: 3, Suggest: preset, Extra: extra}).Error()
			for _, part := range tt.messageParts {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q lacks %q", msg, part)
				}
			}
			if tt.preset != "main" && strings.Contains(msg, "--format main") {
				t.Errorf("message %q advises --format main", msg)
			}
		})
	}
}
