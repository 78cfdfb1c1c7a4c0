package parser

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestParseCombined(t *testing.T) {
	f := mustFormat(t, "combined")
	tests := []struct {
		name string
		line string
		want Record
	}{
		{
			name: "page",
			line: `203.0.113.7 - - [10/Oct/2026:13:55:36 -0700] "GET /blog/post?id=3 HTTP/1.1" 200 2326 "https://example.com/" "Mozilla/5.0 (X11)"` + "\n",
			want: Record{Host: b("203.0.113.7"), Time: time.Date(2026, 10, 10, 20, 55, 36, 0, time.UTC),
				Method: b("GET"), Path: b("/blog/post"), Query: b("id=3"), Protocol: b("HTTP/1.1"),
				Status: 200, Bytes: 2326, Referer: b("https://example.com/"), UserAgent: b("Mozilla/5.0 (X11)")},
		},
		{
			name: "absolute-form target",
			line: `198.51.100.2 - - [21/Nov/2026:12:00:00 +0000] "GET http://example.com/a/b?c=d HTTP/1.1" 200 5 "-" "ua"`,
			want: Record{Host: b("198.51.100.2"), Time: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
				Method: b("GET"), Path: b("/a/b"), Query: b("c=d"), Protocol: b("HTTP/1.1"),
				Status: 200, Bytes: 5, Referer: b("-"), UserAgent: b("ua")},
		},
		{
			name: "ipv6 and dash bytes",
			line: `2001:db8::1 - alice [01/Jan/2026:00:00:00 +0000] "POST /login HTTP/2.0" 302 - "-" "-"`,
			want: Record{Host: b("2001:db8::1"), Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
				Method: b("POST"), Path: b("/login"), Protocol: b("HTTP/2.0"),
				Status: 302, Bytes: 0, Referer: b("-"), UserAgent: b("-")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Record
			if err := f.Parse([]byte(tt.line), &got); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !equal(got, tt.want) {
				t.Errorf("got  %s\nwant %s", dump(got), dump(tt.want))
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	f := mustFormat(t, "combined")
	tests := []struct {
		name string
		line string
		want error
	}{
		{"empty", ``, ErrFormat},
		{"garbage", `this is not a log line`, ErrFormat},
		{"bad time", `1.2.3.4 - - [99/Foo/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`, ErrTimestamp},
		{"dash request", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "-" 400 0 "-" "-"`, ErrRequest},
		{"tls junk", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "\x16\x03\x01\x00\xa5\x01" 400 0 "-" "-"`, ErrRequest},
		{"bad status", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 2x0 1 "-" "ua"`, ErrNumber},
		{"bad bytes", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 -5 "-" "ua"`, ErrNumber},
		{"empty path", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET ?a=1 HTTP/1.1" 200 1 "-" "ua"`, ErrRequest},
		{"no host", `- - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`, ErrHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			err := f.Parse([]byte(tt.line), &r)
			if !errors.Is(err, tt.want) {
				t.Errorf("Parse(%q) = %v, want %v", tt.line, err, tt.want)
			}
		})
	}
}

func TestNewRejectsBadSpec(t *testing.T) {
	for _, spec := range []string{"", "$remote_addr only", `$remote_addr [$time_local]`} {
		if _, err := New(spec); !errors.Is(err, ErrBadSpec) {
			t.Errorf("New(%q) = %v, want ErrBadSpec", spec, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("../testdata/sample.log"); err == nil {
		for _, line := range splitLines(data) {
			f.Add(string(line))
		}
	}
	f.Add(`1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`)
	formats := []*Format{mustFormat(f, "combined"), mustFormat(f, "common")}
	f.Fuzz(func(t *testing.T, line string) {
		for _, format := range formats {
			var r Record
			if err := format.Parse([]byte(line), &r); err != nil {
				if !isReason(err) {
					t.Fatalf("Parse(%q) error %v wraps no reason", line, err)
				}
				continue
			}
			if len(r.Host) == 0 || len(r.Method) == 0 || len(r.Path) == 0 {
				t.Fatalf("Parse(%q) accepted a record with empty fields: %s", line, dump(r))
			}
			if r.Time.Location() != time.UTC {
				t.Fatalf("Parse(%q) time not UTC", line)
			}
		}
	})
}

func isReason(err error) bool {
	for _, r := range Reasons {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}
