package classify

import (
	"bytes"
	"compress/gzip"
	"os"
	"testing"
	"time"

	"github.com/logtally/logtally/internal/loggen"
	"github.com/logtally/logtally/parser"
)

// BenchmarkParseClassify is a line's cost from bytes to a Hit, as ingest's
// workers pay it: parse (BenchmarkParseCombined's lines) and classify,
// with the agents' verdicts remembered. One op is one line.
func BenchmarkParseClassify(b *testing.B) {
	g := loggen.New(loggen.Config{Seed: 1, Start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), Step: time.Second,
		Hosts: 500, Paths: 200})
	var buf []byte
	for range 1024 {
		buf = g.Line(buf)
	}
	benchParseClassify(b, bytes.SplitAfter(buf[:len(buf)-1], []byte{'\n'}))
}

// BenchmarkParseClassifyBlog is BenchmarkParseClassify on a real blog's
// log of 2015: 559 distinct agents, a third of its lines feeds'.
func BenchmarkParseClassifyBlog(b *testing.B) {
	f, err := os.Open("../testdata/blog-2015.log.gz")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	var data bytes.Buffer
	if _, err := data.ReadFrom(z); err != nil {
		b.Fatal(err)
	}
	benchParseClassify(b, bytes.SplitAfter(bytes.TrimSuffix(data.Bytes(), []byte{'\n'}), []byte{'\n'}))
}

func benchParseClassify(b *testing.B, lines [][]byte) {
	f, err := parser.Config{Format: "combined"}.Compile()
	if err != nil {
		b.Fatal(err)
	}
	r := mustNew(b, DefaultConfig())
	var rec parser.Record
	var memo Memo
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size / len(lines)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := f.Parse(lines[i%len(lines)], &rec); err == nil {
			r.ClassifyWith(&rec, &memo)
		}
		i++
	}
}
