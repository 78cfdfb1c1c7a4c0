package parser

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"github.com/logtally/logtally/internal/golden"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parser's output")

// goldens are the golden tests: testdata/LOG.log parsed with cfg must give
// testdata/NAME.golden.
var goldens = []struct {
	name, log string
	cfg       Config
}{
	{"combined", "combined", Config{Format: "combined"}},
	{"common", "common", Config{Format: "common"}},
	{"vhost_combined", "vhost_combined", Config{Format: "vhost_combined"}},
	{"main", "main", Config{Format: "main"}},
	{"main_xff", "main", Config{Format: "main", RealIPFromXFF: true}},
	{"nginx_timing", "nginx_timing", Config{NginxConf: "testdata/nginx.conf", LogFormatName: "timing"}},
	{"nginx_json", "nginx_json", Config{NginxConf: "testdata/nginx.conf", LogFormatName: "json"}},
	{"nginx_msec", "nginx_msec", Config{Format: `$msec $remote_addr "$request" $status $body_bytes_sent "$http_user_agent"`}},
	{"apache_vhost", "apache_vhost", Config{Format: `%v %h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\" %D`}},
}

func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			f, err := g.cfg.Compile()
			if err != nil {
				t.Fatal(err)
			}
			in, err := os.ReadFile(filepath.Join("testdata", g.log+".log"))
			if err != nil {
				t.Fatal(err)
			}
			got := renderGolden(f, g.cfg, in)
			golden.Check(t, filepath.Join("testdata", g.name+".golden"), got, *update)
		})
	}
}

// renderGolden parses every line of in and writes one readable line per result.
func renderGolden(f *Format, cfg Config, in []byte) []byte {
	var out bytes.Buffer
	fmt.Fprintf(&out, "# format: %s\n", f)
	if cfg.RealIPFromXFF {
		fmt.Fprintf(&out, "# real IP from X-Forwarded-For\n")
	}
	var r Record
	for i, line := range splitLines(in) {
		if err := f.Parse(line, &r); err != nil {
			fmt.Fprintf(&out, "%d: reject [%s] %v\n", i+1, reason(err), err)
			continue
		}
		fmt.Fprintf(&out, "%d: %s\n", i+1, dump(r))
	}
	return out.Bytes()
}

// reason names the rejection reason err wraps.
func reason(err error) string {
	for _, r := range Reasons {
		if errors.Is(err, r) {
			return r.Error()
		}
	}
	return "NO REASON"
}
