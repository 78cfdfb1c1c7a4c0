// Package ingesttest gives the tests of package ingest and of its loops
// (ingest/live, ingest/replay) what they share: a real store in a
// temporary directory, parsers, and generated log lines cut into chunks.
// Only tests import it.
package ingesttest

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/loggen"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
)

// T0 is the time the tests' lines are dated from.
var T0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// Store opens a new store in a temporary directory, in UTC, on a clock
// stopped at T0, closed at the end of the test.
func Store(tb testing.TB) *storage.Store {
	tb.Helper()
	s, err := storage.Open(storage.Config{Path: filepath.Join(tb.TempDir(), "db"), TZ: "UTC"},
		func() time.Time { return T0 })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Combined returns the combined format and the default rules.
func Combined(tb testing.TB) (*parser.Format, *classify.Classifier) {
	tb.Helper()
	format, err := parser.New("combined")
	if err != nil {
		tb.Fatal(err)
	}
	classifier, err := classify.New(classify.DefaultConfig(), classify.Fixed{})
	if err != nil {
		tb.Fatal(err)
	}
	return format, classifier
}

// SiteFormat returns a format whose lines name their site ($host), and
// rules for a format without the user agent: the lines of HostLines and
// RandomChunks.
func SiteFormat(tb testing.TB) (*parser.Format, *classify.Classifier) {
	tb.Helper()
	format, err := parser.Config{Format: `$host $remote_addr [$time_local] "$request" $status $body_bytes_sent`,
		SiteField: "$host"}.Compile()
	if err != nil {
		tb.Fatal(err)
	}
	rules := classify.DefaultConfig()
	rules.NoUserAgent = true
	classifier, err := classify.New(rules, classify.Fixed{})
	if err != nil {
		tb.Fatal(err)
	}
	return format, classifier
}

// Chunk returns n combined lines of file "f", one a second from T0 plus
// from seconds, of 20 clients and 3 paths, as read from offset on.
func Chunk(offset int64, from, n int) tailer.Chunk {
	var data []byte
	for i := from; i < from+n; i++ {
		data = fmt.Appendf(data, "192.0.2.%d - - [%s] \"GET /p%d HTTP/1.1\" 200 10 \"-\" \"Firefox\"\n",
			i%20, T0.Add(time.Duration(i)*time.Second).Format("02/Jan/2006:15:04:05 -0700"), i%3)
	}
	return tailer.Chunk{File: "f", Data: data, Offset: offset + int64(len(data))}
}

// Chunks cuts n generated combined lines (every 50th bad), ten a second
// from T0, into chunks of about size bytes, alternating between files "a"
// and "b".
func Chunks(n, size int) []tailer.Chunk {
	g := loggen.New(loggen.Config{Seed: 1, Start: T0, Step: 100 * time.Millisecond, BadEvery: 50})
	var out []tailer.Chunk
	var buf []byte
	off := map[string]int64{}
	for i := 0; i < n; i++ {
		buf = g.Line(buf)
		if len(buf) >= size || i == n-1 {
			file := []string{"a", "b"}[len(out)%2]
			off[file] += int64(len(buf))
			out = append(out, tailer.Chunk{File: file, Data: buf, Offset: off[file]})
			buf = nil
		}
	}
	return out
}

// Feed returns a channel that gives cs, then is closed.
func Feed(cs ...tailer.Chunk) <-chan tailer.Chunk {
	in := make(chan tailer.Chunk, len(cs))
	for _, c := range cs {
		in <- c
	}
	close(in)
	return in
}

// HostLines returns n lines of SiteFormat, a thousand a second up to T0,
// of the hosts host(i) gives, of 50 clients and 7 paths.
func HostLines(n int, host func(i int) string) []byte {
	var data []byte
	for i := range n {
		data = fmt.Appendf(data, "%s 192.0.2.%d [%s] \"GET /p%d HTTP/1.1\" 200 10\n", host(i), i%50,
			T0.Add(-time.Duration(n-i)*time.Second/1000).Format("02/Jan/2006:15:04:05 -0700"), i%7)
	}
	return data
}

// RandomChunks returns a random log of SiteFormat, past the lines the
// verdict on a format waits for: two sites and no site, bad lines, times
// out of order over the three hours before T0, cut at random line ends.
func RandomChunks(rng *rand.Rand, judgeLines int) []tailer.Chunk {
	var data []byte
	for range judgeLines + 3000 + rng.IntN(5000) {
		if rng.IntN(30) == 0 {
			data = append(data, "a line that does not parse\n"...)
			continue
		}
		host := []string{"a.example", "B.example:443", "-"}[rng.IntN(3)]
		when := T0.Add(-time.Duration(rng.IntN(3*3600)) * time.Second)
		data = fmt.Appendf(data, "%s 192.0.2.%d [%s] \"GET /p%d%s HTTP/1.1\" %d 10\n", host, rng.IntN(40),
			when.Format("02/Jan/2006:15:04:05 -0700"), rng.IntN(30), []string{"", ".css"}[rng.IntN(2)],
			[]int{200, 200, 304, 404, 500}[rng.IntN(5)])
	}
	var chunks []tailer.Chunk
	off := 0
	for off < len(data) {
		end := min(len(data), off+1+rng.IntN(40_000))
		for end < len(data) && data[end-1] != '\n' {
			end++
		}
		chunks = append(chunks, tailer.Chunk{File: "f", Data: data[off:end], Offset: int64(end)})
		off = end
	}
	return chunks
}

// MinutesOf returns a site's stored minutes of the day before T0, rejected
// lines left out, as text, and the rejected lines' total: a rejected line
// has no time of its own, and counts in the minute of its batch's newest
// line, so only its total is the same however the lines were committed.
func MinutesOf(tb testing.TB, s *storage.Store, name string) (string, int64) {
	tb.Helper()
	site, ok := s.Site(name)
	if !ok {
		return "none", 0
	}
	ms, err := site.Minutes(T0.Add(-24*time.Hour), T0.Add(time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	var rejected int64
	var out []logtally.Bucket
	for _, m := range ms {
		rejected += m.Rejected
		m.Rejected = 0
		if m.Requests > 0 {
			out = append(out, m)
		}
	}
	return fmt.Sprint(out), rejected
}
