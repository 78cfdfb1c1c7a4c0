package counter

import (
	"fmt"
	"testing"
)

// benchCounters are the counters of a site with a video part, a forum and a
// shop; BenchmarkMatch takes the first 1, 10 or 100.
func benchCounters() []string {
	c := []string{
		"show=GET /thumb/{id}.jpg status=2xx,304",
		"click=GET /watch/{id:[0-9]+}",
		"read=GET /forum/{topic}/{msg:[0-9]+}",
		"cart=POST /cart/add/{product} status=2xx",
		"api=* /api/**",
		"item=GET /shop/{cat}/item/{id:[0-9]+}",
		"post=GET /blog/{year:[0-9]{4}}/{slug}",
		"dl=GET /dl/{file} status=200",
		"login=POST /login",
		"errors=* /** status=5xx",
	}
	for i := len(c); i < 100; i++ {
		switch i % 5 {
		case 0:
			c = append(c, fmt.Sprintf("sec%d=GET /section%d/{id}", i, i))
		case 1:
			c = append(c, fmt.Sprintf("img%d=GET /img%d/{id}.png status=2xx", i, i))
		case 2:
			c = append(c, fmt.Sprintf("api%d=* /api/v1/res%d/{id:[0-9]+}", i, i))
		case 3:
			c = append(c, fmt.Sprintf("cat%d=GET /shop/cat%d/item/{id}", i, i))
		case 4:
			c = append(c, fmt.Sprintf("tag%d=GET /forum/tag%d/{page:[0-9]+}", i, i))
		}
	}
	return c
}

// benchPaths are the paths of an access log of that site: most lines count
// in no counter or in one.
var benchPaths = []string{
	"/thumb/1234567.jpg",
	"/watch/1234567",
	"/forum/golang/98765",
	"/static/css/app.3f2a1b.css",
	"/",
	"/api/v1/users/42/settings",
	"/shop/books/item/9780134190440",
	"/blog/2026/counting-visitors-from-logs",
	"/favicon.ico",
	"/section42/abc",
	"/img/logo.svg",
	"/forum/golang",
	"/dl/logtally-1.4.0-linux-amd64.tar.gz",
	"/thumb/7654321.jpg",
	"/about/team",
	"/watch/not-a-number",
}

// BenchmarkMatch measures one line: ns/op is ns per line.
func BenchmarkMatch(b *testing.B) {
	paths := make([][]byte, len(benchPaths))
	for i, p := range benchPaths {
		paths[i] = []byte(p)
	}
	method := []byte("GET")
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("counters=%d", n), func(b *testing.B) {
			m := mustNew(b, benchCounters()[:n]...)
			dst := make([]Match, 0, 8)
			matched := 0
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				dst = m.Match(method, paths[i%len(paths)], 200, dst[:0])
				matched += len(dst)
				i++
			}
			b.ReportMetric(float64(matched)/float64(i), "matches/line")
		})
	}
}
