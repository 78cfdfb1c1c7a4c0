package parser

import (
	"bytes"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/loggen"
)

// benchLines returns realistic combined lines from the seeded generator, the
// same input for the scanner and for gonx.
func benchLines(tb testing.TB) (lines [][]byte, size int) {
	tb.Helper()
	g := loggen.New(loggen.Config{Seed: 1, Start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), Step: time.Second,
		Hosts: 500, Paths: 200})
	var buf []byte
	for range 1024 {
		buf = g.Line(buf)
	}
	lines = bytes.SplitAfter(buf[:len(buf)-1], []byte{'\n'})
	return lines, len(buf) / len(lines)
}

// BenchmarkParseCombined measures the compiled scanner; one op is one line.
func BenchmarkParseCombined(b *testing.B) { benchParse(b, mustFormat(b, "combined")) }

// BenchmarkParseCombinedGonx measures gonx on the same lines, decoded into the
// same Record: the parser as it was before the scanner, and the fallback.
func BenchmarkParseCombinedGonx(b *testing.B) { benchParse(b, gonxOnly(mustFormat(b, "combined"))) }

// benchParse parses the benchmark lines in turn with f.
func benchParse(b *testing.B, f *Format) {
	lines, size := benchLines(b)
	var r Record
	b.SetBytes(int64(size))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := f.Parse(lines[i%len(lines)], &r); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
