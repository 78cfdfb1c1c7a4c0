package loggen

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/logtally/logtally/parser"
)

var update = flag.Bool("update", false, "rewrite testdata/sample.log")

// sampleConfig is the configuration documented in cmd/loggen for
// testdata/sample.log.
var sampleConfig = Config{Seed: 1, Start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	Step: 1500 * time.Millisecond, Hosts: 60, Paths: 30, BadEvery: 97}

func generate(cfg Config, n int) []byte {
	g := New(cfg)
	var out []byte
	for range n {
		out = g.Line(out)
	}
	return out
}

func TestSampleIsReproducible(t *testing.T) {
	const path = "../../testdata/sample.log"
	got := generate(sampleConfig, 400)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the generator's output; regenerate with go test ./internal/loggen -update", path)
	}
}

func TestLinesParseExceptBadOnes(t *testing.T) {
	f, err := parser.New("combined")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sampleConfig
	cfg.BadEvery = 10
	lines := bytes.SplitAfter(generate(cfg, 1000), []byte{'\n'})
	var rec parser.Record
	ipv6 := 0
	for i, l := range lines[:1000] {
		err := f.Parse(l, &rec)
		if bad := (i+1)%10 == 0; bad != (err != nil) {
			t.Fatalf("line %d %q: bad=%v, parse error %v", i+1, l, bad, err)
		}
		if err == nil && bytes.Contains(rec.Host, []byte{':'}) {
			ipv6++
		}
	}
	if ipv6 == 0 {
		t.Error("no IPv6 clients generated")
	}
}

func BenchmarkLine(b *testing.B) {
	g := New(sampleConfig)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = g.Line(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}
