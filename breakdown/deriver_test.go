package breakdown

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logtally/logtally/parser"
)

const chromeWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// keysOf returns every key of k as breakdown=key, in order.
func keysOf(k *Keys) string {
	var out []string
	for _, b := range All() {
		if v, ok := k.Key(b); ok {
			out = append(out, b.String()+"="+string(v))
		}
	}
	return strings.Join(out, " ")
}

func TestDerive(t *testing.T) {
	cfg := Config{Breakdowns: names[:], GeoIP: countryDB(t, testNetworks), OwnHosts: []string{"www.example.com", "blog.example.com"}}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, Deps{Location: paris})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	noon := time.Date(2026, 5, 18, 10, 30, 0, 0, time.UTC) // Monday, 12:30 in Paris
	tests := []struct {
		name string
		l    line
		want string
	}{
		{"direct", line{host: "81.2.69.1", ref: "-", ua: chromeWindows, path: "/", status: 200, time: noon},
			"referrer=direct channel=direct browser=Chrome os=Windows device=desktop country=GB status=200 hour=12 weekday=mon"},
		{"search", line{host: "198.18.0.1", ref: "https://www.google.co.uk/search?q=alice+smith", ua: chromeWindows, path: "/", status: 200, time: noon},
			"referrer=google.co.uk channel=search browser=Chrome os=Windows device=desktop country=FR status=200 hour=12 weekday=mon"},
		{"own host", line{host: "198.18.0.1", ref: "https://Blog.Example.com:443/post?id=3", ua: "-", path: "/", status: 200, time: noon},
			"referrer=direct channel=direct browser=(unknown) os=(unknown) device=(unknown) country=FR status=200 hour=12 weekday=mon"},
		{"own vhost", line{host: "198.18.0.1", ref: "http://shop.example.net/cart", vhost: "shop.example.net", status: 200, time: noon},
			"referrer=direct channel=direct browser=(unknown) os=(unknown) device=(unknown) country=FR status=200 hour=12 weekday=mon"},
		{"another vhost", line{host: "198.18.0.1", ref: "http://shop.example.net/cart", vhost: "www.example.org", status: 200, time: noon},
			"referrer=shop.example.net channel=other browser=(unknown) os=(unknown) device=(unknown) country=FR status=200 hour=12 weekday=mon"},
		{"invalid referrer", line{host: "198.18.0.1", ref: "/relative", status: 301, time: noon},
			"referrer=(unknown) channel=other browser=(unknown) os=(unknown) device=(unknown) country=FR status=301 hour=12 weekday=mon"},
		{"campaign and 404", line{host: "2001:db8:1::5", ref: "https://t.co/abc", query: "utm_source=mastodon&utm_campaign=launch", path: "/missing/caf\\xE9",
			status: 404, time: noon},
			"referrer=t.co channel=social utm-source=mastodon utm-campaign=launch browser=(unknown) os=(unknown) device=(unknown) country=DE status=404 not-found=/missing/caf\\xE9 hour=12 weekday=mon"},
		{"bad status", line{status: 0, time: noon},
			"referrer=direct channel=direct browser=(unknown) os=(unknown) device=(unknown) country=(unknown) status=(unknown) hour=12 weekday=mon"},
		{"midnight sunday in Paris", line{status: 200, time: time.Date(2026, 5, 17, 22, 0, 0, 0, time.UTC)},
			"referrer=direct channel=direct browser=(unknown) os=(unknown) device=(unknown) country=(unknown) status=200 hour=00 weekday=mon"},
		{"winter", line{status: 200, time: time.Date(2026, 1, 4, 23, 59, 59, 0, time.UTC)},
			"referrer=direct channel=direct browser=(unknown) os=(unknown) device=(unknown) country=(unknown) status=200 hour=00 weekday=mon"},
		{"before 1970", line{status: 200, time: time.Date(1969, 12, 31, 22, 0, 0, 0, time.UTC)},
			"referrer=direct channel=direct browser=(unknown) os=(unknown) device=(unknown) country=(unknown) status=200 hour=23 weekday=wed"},
	}
	var m Memo
	var k Keys
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d.Derive(tt.l.record(), &m, &k)
			if got := keysOf(&k); got != tt.want {
				t.Errorf("keys\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestDeriveSome checks that only the breakdowns on have keys, whichever
// of a group of them are on.
func TestDeriveSome(t *testing.T) {
	l := line{host: "81.2.69.1", ref: "https://www.bing.com/", ua: chromeWindows, query: "utm_source=a&utm_campaign=b", path: "/x", status: 404,
		time: time.Date(2026, 5, 18, 10, 30, 0, 0, time.UTC)}
	tests := []struct {
		on   []string
		want string
	}{
		{nil, ""},
		{[]string{"referrer"}, "referrer=bing.com"},
		{[]string{"channel"}, "channel=search"},
		{[]string{"utm-campaign"}, "utm-campaign=b"},
		{[]string{"device"}, "device=desktop"},
		{[]string{"os", "browser"}, "browser=Chrome os=Windows"},
		{[]string{"not-found"}, "not-found=/x"},
		{[]string{"weekday"}, "weekday=mon"},
		{[]string{"hour"}, "hour=10"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.on, ","), func(t *testing.T) {
			d := newDeriver(t, Config{Breakdowns: tt.on})
			var k Keys
			d.Derive(l.record(), new(Memo), &k)
			if got := keysOf(&k); got != tt.want {
				t.Errorf("keys %q, want %q", got, tt.want)
			}
			if got, want := len(d.Breakdowns()), len(tt.on); got != want {
				t.Errorf("%d breakdowns on, want %d", got, want)
			}
		})
	}
}

func TestCutEscaped(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"/abc", 10, "/abc"},
		{"/abcdef", 4, "/abc"},
		{`/ab\xE9`, 7, `/ab\xE9`},
		{`/ab\xE9`, 6, "/ab"},
		{`/ab\xE9`, 4, "/ab"},
		{`/ab\xE9x`, 7, `/ab\xE9`},
		{"/a\u00e9", 3, "/a"},
	}
	for _, tt := range tests {
		if got := cutEscaped([]byte(tt.in), tt.n); string(got) != tt.want {
			t.Errorf("cutEscaped(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
	d := newDeriver(t, Config{Breakdowns: []string{"not-found"}})
	var k Keys
	d.Derive(line{path: "/" + strings.Repeat("a", 3000), status: 404}.record(), new(Memo), &k)
	if got, _ := k.Key(NotFound); len(got) != MaxPath {
		t.Errorf("a long not-found path is %d bytes, want %d", len(got), MaxPath)
	}
}

// TestDeriveAllocs checks that a line whose agent and network are
// remembered allocates nothing, with every breakdown on: two lines in
// turn, so that neither the Referer nor the agent is the line before's.
func TestDeriveAllocs(t *testing.T) {
	d := newDeriver(t, Config{Breakdowns: names[:], GeoIP: countryDB(t, testNetworks), OwnHosts: []string{"example.com"}})
	lines := []*parser.Record{
		line{host: "81.2.69.1", ref: "https://www.google.com/search?q=x", ua: chromeWindows, vhost: "example.com",
			query: "utm_source=news%20letter&utm_campaign=may", path: "/missing", status: 404, time: time.Now()}.record(),
		line{host: "2001:db8:1::7", ref: "https://Example.com:443/from", ua: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
			vhost: "www.example.com", path: "/", status: 200, time: time.Now()}.record(),
	}
	var m Memo
	var k Keys
	i := 0
	if n := testing.AllocsPerRun(1000, func() { d.Derive(lines[i%2], &m, &k); i++ }); n != 0 {
		t.Errorf("Derive allocates %v times a line", n)
	}
}

func TestStatus(t *testing.T) {
	d := newDeriver(t, Config{Breakdowns: []string{"status"}})
	for _, tt := range []struct {
		status int
		want   string
	}{{100, "100"}, {200, "200"}, {404, "404"}, {599, "599"}, {600, "600"}, {999, "999"}, {99, "(unknown)"}, {0, "(unknown)"}, {1000, "(unknown)"}, {-1, "(unknown)"}} {
		var k Keys
		d.Derive(line{status: tt.status}.record(), new(Memo), &k)
		if got, _ := k.Key(Status); string(got) != tt.want {
			t.Errorf("status %d: key %q, want %q", tt.status, got, tt.want)
		}
	}
}

// TestMemoOwner checks that a Memo given to another Deriver forgets what
// the first one made of the line before.
func TestMemoOwner(t *testing.T) {
	own := newDeriver(t, Config{Breakdowns: []string{"referrer"}, OwnHosts: []string{"example.com"}})
	other := newDeriver(t, Config{Breakdowns: []string{"referrer"}})
	r := line{ref: "https://example.com/"}.record()
	var m Memo
	for _, tt := range []struct {
		d    *Deriver
		want string
	}{{own, "direct"}, {other, "example.com"}, {own, "direct"}} {
		var k Keys
		tt.d.Derive(r, &m, &k)
		if got, _ := k.Key(Referrer); string(got) != tt.want {
			t.Errorf("referrer %q, want %q", got, tt.want)
		}
	}
}

// TestDeriveConcurrent derives the blog's log on four goroutines at once,
// each with its own Memo, from one Deriver, and wants the keys one
// goroutine derives alone.
func TestDeriveConcurrent(t *testing.T) {
	d := newDeriver(t, Config{Breakdowns: names[:], GeoIP: countryDB(t, testNetworks), OwnHosts: []string{"semicomplete.com"}})
	records := blogLines(t)
	want := make([]string, len(records))
	var m Memo
	var k Keys
	for i := range records {
		d.Derive(&records[i], &m, &k)
		want[i] = keysOf(&k)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var m Memo
			var k Keys
			for i := range records {
				j := (i + g*len(records)/4) % len(records)
				d.Derive(&records[j], &m, &k)
				if got := keysOf(&k); got != want[j] {
					t.Errorf("goroutine %d, line %d: %s, want %s", g, j, got, want[j])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestHourAcrossZoneChanges: a memo that remembers the zone's period of
// the line before gives each line the hour and weekday of its own period,
// whether lines come in order across a change of offset or jump about.
func TestHourAcrossZoneChanges(t *testing.T) {
	for _, zone := range []string{"Europe/Paris", "America/St_Johns", "Australia/Lord_Howe", "UTC"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(Config{Breakdowns: []string{"hour", "weekday"}}, Deps{Location: loc})
		if err != nil {
			t.Fatal(err)
		}
		var times []time.Time
		for _, day := range []time.Time{time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC),
			time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC)} {
			for s := 0; s < 4*86400; s += 599 {
				times = append(times, day.Add(time.Duration(s)*time.Second))
			}
		}
		rng := rand.New(rand.NewPCG(1, 1))
		shuffled := slices.Clone(times)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, order := range [][]time.Time{times, shuffled} {
			var m Memo
			var k Keys
			for _, ts := range order {
				d.Derive(line{status: 200, time: ts}.record(), &m, &k)
				lt := ts.In(loc)
				want := fmt.Sprintf("hour=%02d weekday=%s", lt.Hour(), strings.ToLower(lt.Weekday().String()[:3]))
				if got := keysOf(&k); got != want {
					t.Fatalf("%s, %s: %s, want %s", zone, ts, got, want)
				}
			}
		}
	}
}
