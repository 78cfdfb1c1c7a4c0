package parser

import (
	"bytes"
	"fmt"
	"testing"
)

func mustFormat(tb testing.TB, spec string) *Format {
	tb.Helper()
	f, err := New(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func b(s string) []byte { return []byte(s) }

func equal(a, b Record) bool {
	return bytes.Equal(a.Host, b.Host) && a.Time.Equal(b.Time) && a.Time.Location() == b.Time.Location() &&
		bytes.Equal(a.Method, b.Method) && bytes.Equal(a.Path, b.Path) && bytes.Equal(a.Query, b.Query) &&
		bytes.Equal(a.Protocol, b.Protocol) && a.Status == b.Status && a.Bytes == b.Bytes &&
		bytes.Equal(a.Referer, b.Referer) && bytes.Equal(a.UserAgent, b.UserAgent) &&
		bytes.Equal(a.VHost, b.VHost) && a.RequestTime == b.RequestTime
}

func dump(r Record) string {
	s := fmt.Sprintf("host=%q time=%s method=%q path=%q query=%q proto=%q status=%d bytes=%d ref=%q ua=%q",
		r.Host, r.Time.Format("2006-01-02T15:04:05.999Z07:00"), r.Method, r.Path, r.Query, r.Protocol,
		r.Status, r.Bytes, r.Referer, r.UserAgent)
	if r.VHost != nil {
		s += fmt.Sprintf(" vhost=%q", r.VHost)
	}
	if r.RequestTime != 0 {
		s += fmt.Sprintf(" rt=%s", r.RequestTime)
	}
	return s
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		out = append(out, line)
		data = rest
	}
	return out
}

// gonxOnly returns a copy of f that parses with gonx, the reference.
func gonxOnly(f *Format) *Format {
	g := *f
	g.fields = nil
	return &g
}
