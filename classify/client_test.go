package classify

import (
	"testing"

	"github.com/logtally/logtally/parser"
)

// TestOneVisitorPerClient: the spellings a server may log for one client
// are one visitor. Before, ::ffff:192.0.2.7 (a dual-stack socket's IPv4
// client) and 192.0.2.7 were two, and so was each port of one client.
func TestOneVisitorPerClient(t *testing.T) {
	r := mustNew(t, DefaultConfig())
	visitor := func(host string) uint64 {
		rec := &parser.Record{Host: []byte(host), Time: t0, Method: []byte("GET"), Path: []byte("/"),
			Status: 200, UserAgent: []byte("Firefox")}
		h := r.Classify(rec)
		if !h.PageView || h.Visitor == 0 {
			t.Fatalf("%s: no page view with a visitor: %+v", host, h)
		}
		return h.Visitor
	}
	for _, group := range [][]string{
		{"192.0.2.7", "::ffff:192.0.2.7", "::FFFF:192.0.2.7", "::ffff:c000:207", "192.0.2.7:51234",
			"[::ffff:192.0.2.7]:443", "::ffff:192.0.2.7:51234", "0:0:0:0:0:ffff:192.0.2.7"},
		{"2001:db8::1", "2001:DB8:0:0::1", "[2001:db8::1]", "[2001:db8::1]:443", "2001:0db8::0001"},
		{"host.example", "host.example:8080"},
	} {
		want := visitor(group[0])
		for _, host := range group[1:] {
			if got := visitor(host); got != want {
				t.Errorf("%s and %s are two visitors", group[0], host)
			}
		}
	}
	for _, pair := range [][2]string{
		{"192.0.2.7", "192.0.2.8"},
		{"192.0.2.7", "::192.0.2.7"}, // IPv4-compatible, not mapped: another address
		{"2001:db8::1", "2001:db8::2"},
		{"fe80::1%eth0", "fe80::1%eth1"},
	} {
		if visitor(pair[0]) == visitor(pair[1]) {
			t.Errorf("%s and %s are one visitor", pair[0], pair[1])
		}
	}
}

func TestClient(t *testing.T) {
	for _, tt := range []struct{ host, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"::ffff:c000:0207", "192.0.2.7"},
		{"192.0.2.7:80", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"[2001:DB8::1]", "2001:db8::1"},
		{"2001:db8:0:0:0:0:0:1", "2001:db8::1"},
		{"::1", "::1"},
		{"host.example:8080", "host.example"},
		{"host.example", "host.example"},
		// Not an address with a port: kept as written.
		{":80", ":80"},
		{"192.0.2.7:http", "192.0.2.7:http"},
		{"192.0.2.7:123456", "192.0.2.7:123456"},
		{"[2001:db8::1", "[2001:db8::1"},
		{"[2001:db8::1]x", "[2001:db8::1]x"},
		{"[name]:80", "[name]:80"},
		{"1:2:3", "1:2:3"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"unknown", "unknown"},
	} {
		var buf clientBuf
		if got := string(client([]byte(tt.host), &buf)); got != tt.want {
			t.Errorf("client(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

// TestClientDoesNotAllocate: a mapped address, an IPv6 address and a port
// cost no allocation, as a plain IPv4 address does not.
func TestClientDoesNotAllocate(t *testing.T) {
	r := mustNew(t, DefaultConfig())
	for _, host := range []string{"192.0.2.7", "::ffff:192.0.2.7", "[2001:db8::1]:443", "192.0.2.7:51234", "host.example"} {
		rec := &parser.Record{Host: []byte(host), Time: t0, Method: []byte("GET"), Path: []byte("/"),
			Status: 200, UserAgent: []byte("Firefox")}
		if n := testing.AllocsPerRun(100, func() { r.Classify(rec) }); n != 0 {
			t.Errorf("Classify of %s: %v allocs, want 0", host, n)
		}
	}
}

// FuzzClient: client never panics, and gives an address it keeps as it is.
func FuzzClient(f *testing.F) {
	for _, s := range []string{"192.0.2.7", "::ffff:192.0.2.7", "[::1]:80", "a:1", "[", "]:", "::ffff:1.2.3.4:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		var buf, again clientBuf
		once := client([]byte(host), &buf)
		if twice := client(once, &again); string(twice) != string(once) {
			t.Errorf("client(%q) = %q, and of that %q", host, once, twice)
		}
	})
}
