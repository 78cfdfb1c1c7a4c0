package breakdown

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/logtally/logtally/parser"
)

// TestFloodBounded derives every breakdown from a million lines (a tenth
// of that under the race detector), each with
// an agent, a referring host, a campaign and a client /24 never seen
// before, as a scanner or a referrer spammer would send: the caches stay
// at their caps, and the heap that the memo holds stays within what the
// caps allow.
func TestFloodBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a million lines: not in -short")
	}
	d := newDeriver(t, Config{Breakdowns: names[:], GeoIP: countryDB(t, testNetworks), OwnHosts: []string{"example.com"}})
	agents := sampleAgents(t)
	var m Memo
	var k Keys
	var r parser.Record
	var ua, ref, host, query []byte
	derive := func(i int) {
		ua = strconv.AppendInt(append(append(ua[:0], agents[i%len(agents)]...), " flood/"...), int64(i), 10)
		ref = append(strconv.AppendInt(append(ref[:0], "https://spam"...), int64(i), 10), ".example.net/path?q=secret"...)
		host = appendAddr(host[:0], i)
		query = strconv.AppendInt(append(query[:0], "utm_source=s"...), int64(i), 10)
		r = parser.Record{Host: host, Referer: ref, UserAgent: ua, Query: query, Path: []byte("/"), Status: 404,
			Time: time.Unix(int64(i), 0)}
		d.Derive(&r, &m, &k)
	}
	// Warm: the memo's tables are made and full, the key buffer grown.
	for i := range agentSets * agentWays * 2 {
		derive(i)
	}
	before := heapInUse()
	for i := range floodLines {
		derive(i + agentSets*agentWays*2)
	}
	after := heapInUse()
	if got, want := m.agents.len(), agentSets*agentWays; got != want {
		t.Errorf("%d agents remembered, want the cap, %d", got, want)
	}
	if got := m.nets.len(); got > netSets*netWays {
		t.Errorf("%d networks remembered, over the cap of %d", got, netSets*netWays)
	}
	// The agents remembered are replaced by others of about the same
	// length: the heap may move by what the strings of a few hundred
	// agents take, not grow with the lines.
	const slack = 1 << 20
	t.Logf("heap in use: %d KiB before %d lines, %d KiB after; %d agents, %d networks remembered",
		before>>10, floodLines, after>>10, m.agents.len(), m.nets.len())
	if after > before+slack {
		t.Errorf("heap grew from %d to %d bytes over %d lines of distinct agents, referrers and networks", before, after, floodLines)
	}
}

// appendAddr appends an address of the i-th of 16 million /24s, some in
// the test database's networks (81.2.69/24, 198.18/15), most not.
func appendAddr(dst []byte, i int) []byte {
	for _, octet := range []int{81 + i>>16&255, i >> 8 & 255, i & 255} {
		dst = append(strconv.AppendInt(dst, int64(octet%256), 10), '.')
	}
	return append(dst, '7')
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
