package storage

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseSpan(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", Forever},
		{"0d", Forever},
		{"0h0m", Forever},
		{"30d", 30 * day},
		{"2w", 14 * day},
		{"2w1d", 15 * day},
		{"1.5d", 36 * time.Hour},
		{"336h", 14 * day},
		{"1h30m", 90 * time.Minute},
		{"90s", 90 * time.Second},
		{"200000h", 200000 * time.Hour},
		{"1000000h", 1000000 * time.Hour}, // 114 years: past 1970 from now, but representable
		{"106751d", 106751 * day},
	}
	for _, tt := range tests {
		got, err := ParseSpan(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSpan(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestParseSpanRefusesTooLong: a span past what a time.Duration holds is an
// error that says so, never a span wrapped around.
func TestParseSpanRefusesTooLong(t *testing.T) {
	for _, in := range []string{"106752d", "2562048h", "100000000000h", "99999999999999999999999h", "15251w", "106751d24h"} {
		if d, err := ParseSpan(in); !errors.Is(err, ErrSpanTooLong) {
			t.Errorf("ParseSpan(%q) = %v, %v; want ErrSpanTooLong", in, d, err)
		}
	}
	for _, in := range []string{"", "d", "10", "ten days", "10x", "-5d", "1..5h", "h5"} {
		if d, err := ParseSpan(in); err == nil || errors.Is(err, ErrSpanTooLong) {
			t.Errorf("ParseSpan(%q) = %v, %v; want a syntax error", in, d, err)
		}
	}
}

func TestFormatSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{Forever: "0", 14 * 24 * time.Hour: "14d", 400 * 24 * time.Hour: "400d",
		90 * time.Minute: "1h30m0s"} {
		if got := FormatSpan(d); got != want {
			t.Errorf("FormatSpan(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseSpan(FormatSpan(d)); err != nil || back != d {
			t.Errorf("ParseSpan(FormatSpan(%v)) = %v, %v", d, back, err)
		}
	}
}

// TestKeepFlags: every --keep-* flag takes d and w, 0 is forever, and its
// default is written in days.
func TestKeepFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	if got := fs.Lookup("keep-minutes").DefValue; got != "14d" {
		t.Errorf("--keep-minutes default %q, want 14d", got)
	}
	if err := fs.Parse([]string{"--keep-minutes", "30d", "--keep-hours", "2w", "--keep-days", "0"}); err != nil {
		t.Fatal(err)
	}
	if c.MinuteRetention != 30*24*time.Hour || c.HourRetention != 14*24*time.Hour || c.DayRetention != Forever {
		t.Errorf("keep: %v %v %v", c.MinuteRetention, c.HourRetention, c.DayRetention)
	}
	if err := fs.Parse([]string{"--keep-minutes", "0"}); err != nil || c.MinuteRetention != Forever {
		t.Errorf("--keep-minutes 0 = %v, %v; want forever", c.MinuteRetention, err)
	}
	if err := fs.Parse([]string{"--keep-minutes", "1000000w"}); err == nil || !strings.Contains(err.Error(), ErrSpanTooLong.Error()) {
		t.Errorf("--keep-minutes 1000000w: %v, want %v", err, ErrSpanTooLong)
	}
}

// TestSinceDoesNotWrap: a span reaching back past 1970 expires nothing.
// Before, the key of such a time wrapped around to the largest key, and a
// prune deleted everything: --keep-minutes 1000000h kept nothing.
func TestSinceDoesNotWrap(t *testing.T) {
	ref := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).Unix()
	if _, ok := since(ref, 1000000*time.Hour); ok {
		t.Error("a span back past 1970 expires something")
	}
	if got, ok := since(ref, 200000*time.Hour); !ok || got != ref-200000*3600 {
		t.Errorf("since(200000h) = %d, %t", got, ok)
	}
	if _, ok := since(ref, Forever); ok {
		t.Error("Forever expires something")
	}
}
