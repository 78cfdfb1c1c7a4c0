// Command flood writes the worst case for logtally's memory: a combined-format
// log in which every line is a page view by a new visitor (-kind visitors),
// of a new random path (-kind paths), or from a new referring host with a
// new user agent (-kind sources, for the breakdowns), all within one live
// window.
//
// The lines end at -end and are spread evenly over -span before it, so with
// `logtally run --window-end log` every one of them is in the window at once:
// the daemon must hold them all.
//
//	go run ./bench/flood -kind paths -n 10000000 > paths.log
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

func main() {
	kind := flag.String("kind", "visitors",
		"visitors: every line a new client address; paths: every line a new random path; sources: every line a new referring host and user agent")
	n := flag.Int("n", 1_000_000, "lines")
	end := flag.String("end", "2026-11-21T12:00:00Z", "time of the last line, RFC3339")
	span := flag.Duration("span", 9*time.Minute, "time from the first line to the last")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	t, err := time.Parse(time.RFC3339, *end)
	if err == nil && *kind != "visitors" && *kind != "paths" && *kind != "sources" {
		err = fmt.Errorf("-kind %q: want visitors, paths or sources", *kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	write(w, *kind, *n, t.Add(-*span), *span, *seed)
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

const ua = `"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"`

// write appends n lines of kind. Visitors are the i-th address of
// 10.0.0.0/8 (and past 2^24, of 2001:db8::/32); paths are 64 random bits in
// hex, so they do not repeat in practice; sources are the i-th referring
// host and a user agent with the i-th version of a browser no list knows.
func write(w *bufio.Writer, kind string, n int, start time.Time, span time.Duration, seed uint64) {
	paths, sources := kind == "paths", kind == "sources"
	rng := rand.New(rand.NewPCG(seed, 0x666c6f6f64))
	var line []byte
	for i := range n {
		at := start
		if n > 1 {
			at = start.Add(time.Duration(float64(span) * float64(i) / float64(n-1)))
		}
		line = line[:0]
		host := i
		if paths || sources {
			host = rng.IntN(1000)
		}
		if host < 1<<24 {
			line = append(line, "10."...)
			line = strconv.AppendInt(line, int64(host>>16&0xff), 10)
			line = append(line, '.')
			line = strconv.AppendInt(line, int64(host>>8&0xff), 10)
			line = append(line, '.')
			line = strconv.AppendInt(line, int64(host&0xff), 10)
		} else {
			line = append(line, "2001:db8::"...)
			line = strconv.AppendUint(line, uint64(host), 16)
		}
		line = append(line, " - - ["...)
		line = at.UTC().AppendFormat(line, "02/Jan/2006:15:04:05 -0700")
		line = append(line, `] "GET /`...)
		if paths {
			line = append(line, "p/"...)
			line = strconv.AppendUint(line, rng.Uint64(), 16)
		} else {
			line = append(line, "docs/"...)
			line = strconv.AppendInt(line, int64(rng.IntN(100)), 10)
		}
		if sources {
			line = append(line, ` HTTP/1.1" 200 5120 "https://r`...)
			line = strconv.AppendInt(line, int64(i), 36)
			line = append(line, `.example/" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Flood/`...)
			line = strconv.AppendInt(line, int64(i), 10)
			line = append(line, `.0"`...)
		} else {
			line = append(line, ` HTTP/1.1" 200 5120 "-" `...)
			line = append(line, ua...)
		}
		line = append(line, '\n')
		w.Write(line)
	}
}
