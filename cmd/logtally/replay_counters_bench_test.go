package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReplayCounters replays 300,000 generated lines with 1, 10 and 50
// named counters, each matching every line (a key per first segment): what
// a counter costs a line, which should hardly grow with their number.
// bench/counters runs the binary the same way, with 500 and with keys by
// the million.
func BenchmarkReplayCounters(b *testing.B) {
	const lines = 300_000
	dir := b.TempDir()
	log := filepath.Join(dir, "access.log")
	writeLog(b, log, lines)
	for _, n := range []int{0, 1, 10, 50} {
		conf := filepath.Join(dir, fmt.Sprintf("counters%d.conf", n))
		var decl strings.Builder
		for i := range n {
			fmt.Fprintf(&decl, "c%d=* /{section}/**\n", i)
		}
		if err := os.WriteFile(conf, []byte(decl.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("counters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				replayOnce(b, lines, "--db", filepath.Join(b.TempDir(), fmt.Sprintf("db%d", i)), "--counters", conf, log)
			}
			b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
