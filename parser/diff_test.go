package parser

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/loggen"
	"github.com/satyrius/gonx"
)

// TestDifferentialGonx feeds the same lines to the compiled scanner and to
// gonx (the format language's reference implementation, anchored and decoded
// the same way) and wants the same record, or the same rejection reason, from
// both. Lines where they differ on purpose are skipped here and pinned by a
// TestGonxDiffers test each.
func TestDifferentialGonx(t *testing.T) {
	g := loggen.New(loggen.Config{Seed: 7, Start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), Step: 700 * time.Millisecond,
		Hosts: 300, Paths: 100, BadEvery: 17})
	var generated []byte
	for range 2000 {
		generated = g.Line(generated)
	}
	sample, err := os.ReadFile("../testdata/sample.log")
	if err != nil {
		t.Fatal(err)
	}
	type input struct {
		name  string
		cfg   Config
		lines [][]byte
	}
	inputs := []input{{"loggen", Config{Format: "combined"}, append(splitLines(generated), splitLines(sample)...)}}
	for _, gd := range goldens {
		in, err := os.ReadFile(filepath.Join("testdata", gd.log+".log"))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{gd.name, gd.cfg, splitLines(in)})
	}
	compared, skipped := 0, 0
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			fast, err := in.cfg.Compile()
			if err != nil {
				t.Fatal(err)
			}
			if !fast.Compiled() || fast.gonx == nil {
				t.Fatalf("%s: compiled %v, gonx %v", fast, fast.Compiled(), fast.gonx != nil)
			}
			ref := gonxOnly(fast)
			for _, line := range in.lines {
				if knownDifference(fast, line) != "" {
					skipped++
					continue
				}
				compared++
				var got, want Record
				gotErr, wantErr := fast.Parse(line, &got), ref.Parse(line, &want)
				switch {
				case reason(gotErr) != reason(wantErr):
					t.Errorf("line %q:\nscanner: %v\ngonx:    %v", line, gotErr, wantErr)
				case gotErr == nil && !equal(got, want):
					t.Errorf("line %q:\nscanner: %s\ngonx:    %s", line, dump(got), dump(want))
				}
			}
		})
	}
	t.Logf("compared %d lines, skipped %d known differences", compared, skipped)
	if compared < 2000 || skipped > 20 {
		t.Errorf("compared %d lines, skipped %d", compared, skipped)
	}
}

// knownDifference names the TestGonxDiffers test that explains why the
// scanner and gonx differ on line, or returns "" if they must agree.
func knownDifference(f *Format, line []byte) string {
	if bytes.Contains(line, []byte(`\"`)) {
		return "backslash quote"
	}
	var vals values
	if last := f.toks[len(f.toks)-1]; last.name != "" && f.split(line, &vals) == nil &&
		bytes.IndexByte(vals.v(roles[last.name]), ' ') >= 0 {
		return "last field runs to the end"
	}
	return ""
}

// TestGonxDiffers pins each case where the parser and gonx differ on
// purpose: raw is what gonx itself makes of the line.
func TestGonxDiffers(t *testing.T) {
	tests := []struct {
		name   string
		format string
		line   string
		field  string // the gonx field to look at
		raw    string // its value from gonx; "REJECT" if gonx rejects the line
		want   Record // zero if the parser must reject the line
		err    error
	}{
		{
			// Apache and nginx escape=json write a quote inside a quoted field
			// as \"; gonx's [^"]* stops at it and truncates the user agent.
			name:   "backslash quote",
			format: "combined",
			line:   `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "Mozilla \"x\" y"`,
			field:  "http_user_agent", raw: `Mozilla \`,
			want: Record{Host: b("1.2.3.4"), Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Method: b("GET"),
				Path: b("/"), Protocol: b("HTTP/1.1"), Status: 200, Bytes: 1, Referer: b("-"), UserAgent: b(`Mozilla "x" y`)},
		},
		{
			// nginx's default escaping writes \x22; gonx leaves it as written,
			// the parser decodes it.
			name:   "hex escape decoded",
			format: "combined",
			line:   `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "Mozilla \x22x\x22"`,
			field:  "http_user_agent", raw: `Mozilla \x22x\x22`,
			want: Record{Host: b("1.2.3.4"), Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Method: b("GET"),
				Path: b("/"), Protocol: b("HTTP/1.1"), Status: 200, Bytes: 1, Referer: b("-"), UserAgent: b(`Mozilla "x"`)},
		},
		{
			// gonx's regexp is anchored only at the start: it accepts a line
			// with more fields than the format. The parser rejects it.
			name:   "trailing fields",
			format: "combined",
			line:   `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua" "5.6.7.8"`,
			field:  "http_user_agent", raw: "ua",
			err: ErrFormat,
		},
		{
			// A last field with no literal after it runs to the end of the
			// line, so $upstream_response_time can list several upstreams;
			// gonx stops it at the first space.
			name:   "last field runs to the end",
			format: `$remote_addr [$time_local] "$request" $status $upstream_response_time`,
			line:   `1.2.3.4 [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 502 1.001, 2.003`,
			field:  "upstream_response_time", raw: "1.001,",
			want: Record{Host: b("1.2.3.4"), Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Method: b("GET"),
				Path: b("/"), Protocol: b("HTTP/1.1"), Status: 502},
		},
		{
			// A field runs to the whole literal after it, not to that
			// literal's first byte: a $remote_user may hold a space.
			name:   "field holds the first byte of its literal",
			format: "combined",
			line:   `1.2.3.4 - bob smith [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`,
			field:  "remote_user", raw: "REJECT",
			want: Record{Host: b("1.2.3.4"), Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Method: b("GET"),
				Path: b("/"), Protocol: b("HTTP/1.1"), Status: 200, Bytes: 1, Referer: b("-"), UserAgent: b("ua")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFormat(t, tt.format)
			raw := "REJECT"
			if e, err := gonx.NewParser(f.String()).ParseString(tt.line); err == nil {
				raw, _ = e.Field(tt.field)
			}
			if raw != tt.raw {
				t.Errorf("gonx %s = %q, want %q (has gonx changed?)", tt.field, raw, tt.raw)
			}
			var got Record
			err := f.Parse([]byte(tt.line), &got)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Parse = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !equal(got, tt.want) {
				t.Errorf("got  %s\nwant %s", dump(got), dump(tt.want))
			}
		})
	}
}
