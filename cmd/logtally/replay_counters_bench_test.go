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
	for _, c := range []struct {
		n     int
		apart bool
	}{{0, false}, {1, false}, {10, false}, {50, false}, {10, true}, {50, true}} {
		n := c.n
		conf := filepath.Join(dir, fmt.Sprintf("counters%d-%v.conf", n, c.apart))
		var decl strings.Builder
		for i := range n {
			if c.apart {
				// A method list of its own: each counts apart.
				fmt.Fprintf(&decl, "c%d=GET,X%c%c /{section}/**\n", i, 'A'+i/26, 'A'+i%26)
			} else {
				fmt.Fprintf(&decl, "c%d=* /{section}/**\n", i)
			}
		}
		if err := os.WriteFile(conf, []byte(decl.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("counters=%d", n)
		if c.apart {
			name += "/apart"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				replayOnce(b, lines, "--db", filepath.Join(b.TempDir(), fmt.Sprintf("db%d", i)), "--counters", conf, log)
			}
			b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
