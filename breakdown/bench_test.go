package breakdown

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/logtally/logtally/parser"
)

// benchNets are benchNetworks random networks of /16 to /24 with random
// countries, about the depth of a real country database's tree, and the
// blog's addresses in France.
var benchNets = sync.OnceValue(func() map[string]string {
	rng := rand.New(rand.NewPCG(1, 2))
	nets := map[string]string{"198.18.0.0/15": "FR"}
	for len(nets) < benchNetworks {
		a := netip.AddrFrom4([4]byte{byte(1 + rng.IntN(190)), byte(rng.IntN(256)), byte(rng.IntN(256)), 0})
		p, _ := a.Prefix(16 + rng.IntN(9))
		nets[p.String()] = string([]byte{byte('A' + rng.IntN(26)), byte('A' + rng.IntN(26))})
	}
	return nets
})

const benchNetworks = 50_000

// benchDB writes the database of benchNets for one benchmark.
func benchDB(b *testing.B) string { return writeDB(b, "GeoLite2-Country", benchNets()) }

// BenchmarkDerive derives each breakdown alone, then the defaults and all
// of them, over the lines of a real blog's log, in turn; one op is one
// line. The memo is warm: the log's agents and networks are remembered, as
// they are in a log's steady state.
func BenchmarkDerive(b *testing.B) {
	records := blogLines(b)
	cases := [][]string{{"none"}}
	for _, n := range names {
		cases = append(cases, []string{n})
	}
	cases = append(cases, append([]string{"default"}, DefaultBreakdowns...), append([]string{"all"}, names[:]...))
	for _, c := range cases {
		on := c
		if len(c) > 1 || c[0] == "none" {
			on = c[1:]
		}
		b.Run(c[0], func(b *testing.B) {
			cfg := Config{Breakdowns: on, OwnHosts: []string{"semicomplete.com"}}
			if slices.Contains(on, "country") {
				cfg.GeoIP = benchDB(b)
			}
			d := newDeriver(b, cfg)
			benchDerive(b, d, records)
		})
	}
}

// benchDerive derives records in turn with d, after one warming pass. It
// reports the thread's CPU time per line besides the wall time: on a
// machine that other work shares, only the first stays put.
func benchDerive(b *testing.B, d *Deriver, records []parser.Record) {
	var m Memo
	var k Keys
	for i := range records {
		d.Derive(&records[i], &m, &k)
	}
	b.ReportAllocs()
	i := 0
	start := threadCPU()
	for b.Loop() {
		d.Derive(&records[i%len(records)], &m, &k)
		i++
	}
	b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkAgentMiss derives the browser, system and device of agents
// never seen (real agents of the blog, each made new by a number), so
// that each is parsed and remembered, evicting another: what a flood of
// distinct agents costs a line.
func BenchmarkAgentMiss(b *testing.B) {
	agents := sampleAgents(b)
	const distinct = 4 * agentSets * agentWays // more than the cache holds
	records := make([]parser.Record, distinct)
	for i := range records {
		records[i].UserAgent = fmt.Appendf(nil, "%s n/%d", agents[i%len(agents)], i)
	}
	benchDerive(b, newDeriver(b, Config{Breakdowns: []string{"browser", "os", "device"}}), records)
}

// BenchmarkCountryMiss derives the country of addresses of networks never
// seen, so that each is looked up in the database: what a flood of
// distinct networks costs a line.
func BenchmarkCountryMiss(b *testing.B) {
	const distinct = 4 * netSets * netWays
	records := make([]parser.Record, distinct)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range records {
		records[i].Host = []byte(strconv.Itoa(1+rng.IntN(190)) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ".1")
	}
	benchDerive(b, newDeriver(b, Config{Breakdowns: []string{"country"}, GeoIP: benchDB(b)}), records)
}
