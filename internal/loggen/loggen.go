// Package loggen writes realistic, seeded access-log lines in the combined
// format, for samples, tests and benchmarks.
//
// The same Config always yields the same bytes, so a generated file can be
// committed next to the command that made it and checked by a test.
package loggen

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Config describes a generated log.
type Config struct {
	Seed     uint64
	Start    time.Time     // timestamp of the first line
	Step     time.Duration // time between consecutive lines
	Hosts    int           // distinct client addresses (a tenth of them IPv6)
	Paths    int           // distinct page paths
	BadEvery int           // every BadEvery-th line is malformed; 0 for none
	// Distinct makes every page path a new one, numbered by the line
	// (Paths is then not used): as many keys as page views, for tests
	// of what a flood of keys costs.
	Distinct bool
}

// Generator appends lines to a buffer without allocating.
type Generator struct {
	cfg  Config
	rng  *rand.Rand
	n    int
	unix int64 // Start in nanoseconds
}

// New returns a generator.
func New(cfg Config) *Generator {
	if cfg.Hosts <= 0 {
		cfg.Hosts = 100
	}
	if cfg.Paths <= 0 {
		cfg.Paths = 50
	}
	return &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6c6f67)), unix: cfg.Start.UnixNano()}
}

var (
	browsers = []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
	}
	crawlers = []string{
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
		"curl/8.5.0",
	}
	assets   = []string{"/static/app.css", "/static/app.js", "/img/logo.png", "/favicon.ico", "/fonts/inter.woff2"}
	referers = []string{"-", "https://www.google.com/", "https://example.com/", "https://news.ycombinator.com/"}
	sections = []string{"blog", "docs", "news", "items", "tags"}
	bad      = []string{
		`this is not an access log line`,
		`203.0.113.9 - - [21/Nov/2026:12:00:00 +0000] "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" 400 157 "-" "-"`,
		`203.0.113.9 - - [21/Nov/2026:12:00:00 +0000] "GET / HTTP/1.1" 200`,
	}
)

// Line appends the next line, with its newline, to dst.
func (g *Generator) Line(dst []byte) []byte {
	g.n++
	t := time.Unix(0, g.unix+int64(g.n-1)*int64(g.cfg.Step)).UTC()
	if g.cfg.BadEvery > 0 && g.n%g.cfg.BadEvery == 0 {
		return append(append(dst, bad[g.rng.IntN(len(bad))]...), '\n')
	}
	dst = g.host(dst, g.rng.IntN(g.cfg.Hosts))
	dst = append(dst, " - - ["...)
	dst = t.AppendFormat(dst, "02/Jan/2006:15:04:05 -0700")
	dst = append(dst, `] "`...)

	status, ua := 200, browsers[g.rng.IntN(len(browsers))]
	roll := g.rng.IntN(100)
	switch {
	case roll < 55: // a page
		dst = append(dst, "GET "...)
		dst = g.page(dst)
	case roll < 75: // an asset
		dst = append(dst, "GET "...)
		dst = append(dst, assets[g.rng.IntN(len(assets))]...)
	case roll < 85: // a crawler
		ua = crawlers[g.rng.IntN(len(crawlers))]
		dst = append(dst, "GET "...)
		dst = g.page(dst)
	case roll < 92: // not found
		status = 404
		dst = append(dst, "GET /missing/"...)
		dst = strconv.AppendInt(dst, int64(g.rng.IntN(1000)), 10)
	case roll < 96: // a form post
		status = 302
		dst = append(dst, "POST /login"...)
	default: // a redirect
		status = 301
		dst = append(dst, "GET /old/"...)
		dst = strconv.AppendInt(dst, int64(g.rng.IntN(20)), 10)
	}
	dst = append(dst, ` HTTP/1.1" `...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(200+g.rng.IntN(40000)), 10)
	dst = append(dst, ` "`...)
	dst = append(dst, referers[g.rng.IntN(len(referers))]...)
	dst = append(dst, `" "`...)
	dst = append(dst, ua...)
	return append(dst, "\"\n"...)
}

// page appends a page path; a few paths get most of the views.
func (g *Generator) page(dst []byte) []byte {
	i := int(float64(g.cfg.Paths) * g.rng.Float64() * g.rng.Float64())
	if g.cfg.Distinct {
		i = g.n + 1
	}
	if i == 0 {
		return append(dst, '/')
	}
	dst = append(dst, '/')
	dst = append(dst, sections[i%len(sections)]...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(i), 10)
	if g.rng.IntN(10) == 0 {
		dst = append(dst, "?utm_source=feed"...)
	}
	return dst
}

// host appends the i-th client address: IPv4 in 198.18.0.0/15, or IPv6 in
// 2001:db8::/32 for every tenth client.
func (g *Generator) host(dst []byte, i int) []byte {
	if i%10 == 9 {
		dst = append(dst, "2001:db8::"...)
		return strconv.AppendUint(dst, uint64(i), 16)
	}
	dst = append(dst, "198."...)
	dst = strconv.AppendInt(dst, int64(18+(i>>16)&1), 10)
	dst = append(dst, '.')
	dst = strconv.AppendInt(dst, int64(i>>8&0xff), 10)
	dst = append(dst, '.')
	return strconv.AppendInt(dst, int64(i&0xff), 10)
}
