package parser

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/logtally/logtally"
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

// FuzzParse checks, for every golden format, that Parse never panics, that
// every error has a reason, that accepted records are sane, that a reused
// Record (with its scratch buffer and minute cache) gives what a fresh one
// gives, and that $time_local agrees with time.Parse.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.log")
	seeds = append(seeds, "../testdata/sample.log")
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range splitLines(data) {
			f.Add(string(line))
		}
	}
	var formats []*Format
	for _, g := range goldens {
		format, err := g.cfg.Compile()
		if err != nil {
			f.Fatal(err)
		}
		formats = append(formats, format)
	}
	reused := make([]Record, len(formats))
	f.Fuzz(func(t *testing.T, line string) {
		for i, format := range formats {
			var fresh Record
			err := format.Parse([]byte(line), &fresh)
			if err2 := format.Parse([]byte(line), &reused[i]); (err == nil) != (err2 == nil) || err == nil && !equal(fresh, reused[i]) {
				t.Fatalf("%s: Parse(%q) fresh %v %s, reused %v %s", format, line, err, dump(fresh), err2, dump(reused[i]))
			}
			if err != nil {
				if !isReason(err) {
					t.Fatalf("Parse(%q) error %v wraps no reason", line, err)
				}
				continue
			}
			r := fresh
			if len(r.Host) == 0 || len(r.Method) == 0 || len(r.Path) == 0 || r.Bytes < 0 || r.RequestTime < 0 {
				t.Fatalf("%s: Parse(%q) accepted a bad record: %s", format, line, dump(r))
			}
			if !utf8.Valid(r.Path) || !bytes.Equal(logtally.AppendEscaped(nil, logtally.UnescapeText(string(r.Path))), r.Path) {
				t.Fatalf("%s: Parse(%q) path %q is not in the escaped form", format, line, r.Path)
			}
			if format.set&(1<<roleStatus) != 0 && (r.Status < 100 || r.Status > 999) {
				t.Fatalf("%s: Parse(%q) status %d", format, line, r.Status)
			}
			if r.Time.Location() != time.UTC {
				t.Fatalf("Parse(%q) time not UTC", line)
			}
			var vals values
			if format.Compiled() && format.split([]byte(line), &vals) == nil && format.set&(1<<roleTimeLocal) != 0 {
				field := string(vals.v(roleTimeLocal))
				want, err := time.Parse("02/Jan/2006:15:04:05 -0700", field)
				if err != nil || !want.Equal(r.Time) {
					t.Fatalf("time %q: got %v, time.Parse %v, %v", field, r.Time, want, err)
				}
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

// TestTimeMatchesTimePackage checks the hand-written timestamp readers
// against package time on random instants and offsets, leap days included.
func TestTimeMatchesTimePackage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		sec := rng.Int64N(253402300799) // to 9999-12-31
		zone := time.FixedZone("", (rng.IntN(48)-24)*1800)
		want := time.Unix(sec, 0).In(zone)
		if want.Year() > 9999 {
			continue
		}
		for _, c := range []struct {
			layout string
			parse  func([]byte) (time.Time, bool)
		}{
			{"02/Jan/2006:15:04:05 -0700", timeLocal},
			{"2006-01-02T15:04:05-07:00", timeISO},
		} {
			text := want.Format(c.layout)
			got, ok := c.parse([]byte(text))
			if !ok || !got.Equal(want) || got.Location() != time.UTC {
				t.Fatalf("%q: got %v %v, want %v", text, got, ok, want.UTC())
			}
		}
	}
	for _, bad := range []string{"29/Feb/2100:00:00:00 +0000", "31/Apr/2026:00:00:00 +0000", "01/Jan/2026:24:00:00 +0000",
		"01/Jan/2026:00:60:00 +0000", "01/Jan/2026:00:00:60 +0000", "01/jan/2026:00:00:00 +0000", "01/Jan/2026:00:00:00 +2400",
		"01/Jan/2026:00:00:00 0000", "1/Jan/2026:00:00:00 +0000", "00/Jan/2026:00:00:00 +0000"} {
		if got, ok := timeLocal([]byte(bad)); ok {
			t.Errorf("timeLocal(%q) = %v, want error", bad, got)
		}
	}
}

// TestParseDoesNotAllocate covers the accepted and the rejected paths.
func TestParseDoesNotAllocate(t *testing.T) {
	f := mustFormat(t, "combined")
	lines := []string{
		`203.0.113.7 - - [10/Oct/2026:13:55:36 -0700] "GET /blog/post?id=3 HTTP/1.1" 200 2326 "https://example.com/" "Mozilla/5.0 (X11)"`,
		`203.0.113.7 - - [10/Oct/2026:13:55:37 -0700] "GET /q?s=\x22a\x22 HTTP/1.1" 200 2326 "-" "Mozilla \"x\""`,
		`this is not a log line`,
		`1.2.3.4 - - [99/Foo/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`,
		`1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "\x16\x03\x01\x00\xa5\x01" 400 0 "-" "-"`,
		`1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 -5 "-" "ua"`,
		`- - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`,
	}
	var r Record
	for _, line := range lines {
		b := []byte(line)
		f.Parse(b, &r) // let the scratch buffer grow once
		if n := testing.AllocsPerRun(100, func() { f.Parse(b, &r) }); n != 0 {
			t.Errorf("Parse(%q): %v allocs, want 0", line, n)
		}
	}
	xff, err := Config{Format: "main", RealIPFromXFF: true}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`10.0.0.1 - - [21/Nov/2026:12:00:02 +0000] "GET /b HTTP/1.1" 200 612 "-" "Mozilla/5.0" "unknown, 2001:db8::5, 10.0.0.2"`,
		`10.0.0.1 - - [21/Nov/2026:12:00:03 +0000] "GET /c HTTP/1.1" 200 612 "-" "Mozilla/5.0" "not an address"`,
	} {
		b := []byte(line)
		if n := testing.AllocsPerRun(100, func() { xff.Parse(b, &r) }); n != 0 {
			t.Errorf("Parse(%q) with --real-ip-from-xff: %v allocs, want 0", line, n)
		}
	}
}

// TestDecimal: digits only, at most max of them, and no value past
// MaxInt64, on both sides of the length from which a value could overflow.
func TestDecimal(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want int64
		ok   bool
	}{
		{"", 19, 0, false},
		{"0", 3, 0, true},
		{"007", 3, 7, true},
		{"404", 3, 404, true},
		{"4040", 3, 0, false},
		{"12a", 3, 0, false},
		{"/12", 3, 0, false},
		{"-1", 19, 0, false},
		{"999999999999999999", 19, 999999999999999999, true},
		{"999999999999999999x", 19, 0, false},
		{"9223372036854775807", 19, math.MaxInt64, true},
		{"9223372036854775808", 19, 0, false},
		{"9999999999999999999", 19, 0, false},
		{"99999999999999999999", 20, 0, false},
	}
	for _, tt := range tests {
		if got, ok := decimal([]byte(tt.in), tt.max); got != tt.want || ok != tt.ok {
			t.Errorf("decimal(%q, %d) = %d, %v; want %d, %v", tt.in, tt.max, got, ok, tt.want, tt.ok)
		}
	}
}
