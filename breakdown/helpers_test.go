package breakdown

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/logtally/logtally/parser"
)

// blogLog is the real blog's log of 2015: its agents and referrers are
// those of real browsers, crawlers and feed readers.
const blogLog = "../testdata/blog-2015.log.gz"

var (
	blogOnce    sync.Once
	blogRecords []parser.Record
	blogErr     error
)

// blogLines returns the records of blogLog's lines, parsed once, each with
// its own bytes.
func blogLines(tb testing.TB) []parser.Record {
	tb.Helper()
	blogOnce.Do(func() { blogRecords, blogErr = readRecords(blogLog) })
	if blogErr != nil {
		tb.Fatal(blogErr)
	}
	return blogRecords
}

// readRecords parses each line of a gzipped combined log into a record of
// its own.
func readRecords(path string) ([]parser.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	format, err := parser.Config{Format: "combined"}.Compile()
	if err != nil {
		return nil, err
	}
	var out []parser.Record
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		var r parser.Record
		if format.Parse(bytes.Clone(sc.Bytes()), &r) == nil {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// sampleReferrers returns the distinct referrers of the blog's log, to
// seed the fuzz tests.
func sampleReferrers(tb testing.TB) []string {
	return distinct(tb, func(r *parser.Record) []byte { return r.Referer })
}

// sampleAgents returns the distinct user agents of the blog's log.
func sampleAgents(tb testing.TB) []string {
	return distinct(tb, func(r *parser.Record) []byte { return r.UserAgent })
}

func distinct(tb testing.TB, field func(*parser.Record) []byte) []string {
	seen := map[string]bool{}
	var out []string
	for i := range blogLines(tb) {
		s := string(field(&blogLines(tb)[i]))
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// countryDB writes a country database in the format of GeoLite2-Country
// to a temporary file, with each network's country code, and returns its
// path. ("registered:XX" is a record with only a registered country, as
// an anonymous proxy's is.)
func countryDB(tb testing.TB, networks map[string]string) string {
	tb.Helper()
	return writeDB(tb, "GeoLite2-Country", networks)
}

func writeDB(tb testing.TB, dbType string, networks map[string]string) string {
	tb.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, IncludeReservedNetworks: true, RecordSize: 24})
	if err != nil {
		tb.Fatal(err)
	}
	for cidr, cc := range networks {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			tb.Fatal(err)
		}
		rec := mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(cc)}}
		if reg, ok := strings.CutPrefix(cc, "registered:"); ok {
			rec = mmdbtype.Map{"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String(reg)}}
		}
		if err := tree.Insert(n, rec); err != nil {
			tb.Fatal(err)
		}
	}
	path := filepath.Join(tb.TempDir(), "country.mmdb")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// line is the fields of a log line that breakdowns are derived from.
type line struct {
	host, ref, ua, vhost, path, query string
	status                            int
	time                              time.Time
}

// record returns l as the parser would.
func (l line) record() *parser.Record {
	b := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	return &parser.Record{Host: b(l.host), Referer: b(l.ref), UserAgent: b(l.ua), VHost: b(l.vhost), Path: b(l.path),
		Query: b(l.query), Status: l.status, Time: l.time}
}

// newDeriver returns the Deriver of cfg, closed when the test ends.
func newDeriver(tb testing.TB, cfg Config) *Deriver {
	tb.Helper()
	d, err := New(cfg, Deps{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Error(err)
		}
	})
	return d
}
