package storage

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Forever is the retention of a resolution that is never pruned: what 0
// means for every --keep-* flag.
const Forever = time.Duration(math.MaxInt64)

// ErrSpanTooLong means a retention span is longer than a time.Duration
// holds (106,751 days, about 292 years). It is refused rather than wrapped
// around into a span that would keep nothing.
var ErrSpanTooLong = errors.New("longer than the longest span logtally can represent (106751d, about 292 years): use 0 to keep it forever")

// errSpanSyntax is the error of a span that does not parse.
var errSpanSyntax = errors.New("want a span such as 14d, 2w, 720h or 90m, or 0 to keep it forever")

// spanUnits are the units of a span, in nanoseconds: Go's, and d and w.
var spanUnits = map[string]uint64{
	"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9,
	"d": 24 * 3600e9, "w": 7 * 24 * 3600e9,
}

// ParseSpan parses a retention span: a Go duration (720h, 1h30m) whose
// units may also be d (24 hours) and w (7 days), as in 30d or 2w1d. Any
// zero span, such as 0 or 0d, is Forever.
func ParseSpan(s string) (time.Duration, error) {
	if s == "0" {
		return Forever, nil
	}
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("must not be negative; use 0 to keep it forever")
	}
	if s == "" {
		return 0, errSpanSyntax
	}
	var total uint64
	for s != "" {
		i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return 0, errSpanSyntax
		}
		num := s[:i]
		j := strings.IndexAny(s[i:], "0123456789.")
		if j < 0 {
			j = len(s) - i
		}
		unit, ok := spanUnits[s[i:i+j]]
		if !ok {
			return 0, errSpanSyntax
		}
		s = s[i+j:]
		v, err := spanPart(num, unit)
		if err != nil {
			return 0, err
		}
		if v > math.MaxInt64-total {
			return 0, ErrSpanTooLong
		}
		total += v
	}
	if total == 0 {
		return Forever, nil
	}
	return time.Duration(total), nil
}

// spanPart is a number (digits, with an optional fraction) of unit
// nanoseconds, in nanoseconds.
func spanPart(num string, unit uint64) (uint64, error) {
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" && frac == "" || strings.Contains(frac, ".") {
		return 0, errSpanSyntax
	}
	var w uint64
	if whole != "" {
		var err error
		if w, err = strconv.ParseUint(whole, 10, 64); errors.Is(err, strconv.ErrRange) {
			return 0, ErrSpanTooLong
		} else if err != nil {
			return 0, errSpanSyntax
		}
	}
	if w > math.MaxInt64/unit {
		return 0, ErrSpanTooLong
	}
	v := w * unit
	if frac != "" {
		f, err := strconv.ParseUint(frac[:min(len(frac), 18)], 10, 64)
		if err != nil {
			return 0, errSpanSyntax
		}
		v += uint64(float64(f) * float64(unit) / math.Pow10(min(len(frac), 18)))
	}
	return v, nil
}

// FormatSpan writes a span as ParseSpan reads it: 0 for Forever, whole days
// as days (14d), anything else as a Go duration.
func FormatSpan(d time.Duration) string {
	switch {
	case d >= Forever:
		return "0"
	case d > 0 && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// spanValue is a --keep-* flag: a span, 0 for Forever.
type spanValue struct{ d *time.Duration }

func (v spanValue) String() string {
	if v.d == nil {
		return ""
	}
	return FormatSpan(*v.d)
}

func (v spanValue) Set(s string) error {
	d, err := ParseSpan(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// since is ref minus span in unix seconds: the oldest second a resolution
// kept for span keeps, when the newest line stored is at ref. It is false
// when nothing is old enough to expire: span is Forever, or ref minus span
// falls before 1970, where a time key would wrap around to the largest key
// and expire everything.
func since(ref int64, span time.Duration) (int64, bool) {
	if span >= Forever || span <= 0 {
		return 0, false
	}
	t := ref - int64(span/time.Second) // no overflow: |ref| and span/s are far below 2^62
	if t <= 0 {
		return 0, false
	}
	return t, true
}
