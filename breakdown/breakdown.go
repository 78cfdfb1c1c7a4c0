// Package breakdown derives, from one parsed log line, the keys that say
// where its visitor came from and who they are: the referring host and its
// channel, the campaign of the landing URL, the browser, system and device
// class of the user agent, the country of the client address, the status,
// the path of a 404, and the hour and weekday of the line. Each breakdown is
// a dimension of the data: its keys are counted as a named counter's keys
// are. This package only derives them; counting and storing them is the
// caller's.
//
// The one idea that makes it cheap: a log holds few distinct user agents
// and client networks, so what costs (a user-agent parse, a database
// lookup) is done once per distinct agent or /24 (/48 for IPv6) and
// remembered in a fixed-size cache of the goroutine's own (Memo); a line
// whose agent and network were seen costs a hash and a compare each. The
// rest is a scan of a few dozen bytes. Keys are written into a buffer the
// caller owns and reuses (Keys), so deriving a line allocates nothing once
// its agent and network are remembered.
//
// What each breakdown costs per line, in CPU time, measured by
// BenchmarkDerive on the agents and referrers of a real blog's log
// (testdata/blog-2015.log.gz), the memo warm (docs/breakdowns.md has the
// table and how it was taken):
//
//	referrer, channel       55 ns  the Referer's host, lower-cased and checked, and its
//	                               channel; a compare when the line before had the same Referer
//	utm-source, -campaign   15 ns  one scan of the query for both
//	browser, os, device     41 ns  a compare with the line before's agent, else a hash and
//	                               a compare in its set; an agent never seen costs a parse
//	                               (~750 ns) and one copy of it
//	country                 33 ns  the address read into its /24's key, a compare in its set;
//	                               a network never seen costs a database lookup (~185 ns)
//	status                   7 ns
//	not-found                4 ns  a copy of the path, on a 404
//	hour, weekday           15 ns  one zone offset for both
//	request-time                   a search of eleven bounds (not in the table)
//	the defaults           139 ns
//
// No key carries personal data: of a referrer only the host is kept (not
// its path, query or user), a campaign value is cut at MaxCampaign bytes,
// and the client address is looked up, never stored or returned (the
// cache holds its /24 or /48).
package breakdown

import "fmt"

// Breakdown names one dimension that a line is broken down by.
type Breakdown uint8

// The breakdowns, in the order Keys holds them.
const (
	// Referrer is the referring host: lower-case, without its port or a
	// leading "www.", or Direct when the line has no referrer or one of
	// the site's own hosts, or Unknown when its Referer names no host.
	Referrer Breakdown = iota
	// Channel is the group of the referring host: ChannelDirect,
	// ChannelSearch, ChannelSocial or ChannelOther (see channels.go).
	Channel
	// UTMSource and UTMCampaign are the utm_source and utm_campaign
	// parameters of the request's query, decoded and cut at MaxCampaign
	// bytes; a line without one has no key.
	UTMSource
	UTMCampaign
	// Browser, OS and Device are what the user agent tells, as
	// github.com/medama-io/go-useragent reads it: "Chrome", "Windows",
	// "desktop"; Unknown where it tells nothing.
	Browser
	OS
	Device
	// Country is the ISO 3166-1 code of the client address's country in
	// the --geoip database ("FR"), or Unknown.
	Country
	// Status is the response status, as three digits ("404").
	Status
	// NotFound is the path of a 404, as logtally holds paths (see
	// logtally.AppendEscaped), cut at MaxPath bytes; other lines have no key.
	NotFound
	// Hour and Weekday are the line's hour of day ("00" to "23") and day of
	// the week ("mon" to "sun") in the zone of Deps.Location.
	Hour
	Weekday
	// RequestTime is how long the request took, as the upper bound of
	// its bucket ("100ms": over 50 ms and up to 100 ms; "more" past 10 s;
	// see timing.go), when the log format says (Deps.Timed).
	RequestTime
	numBreakdowns
)

// Keys that are not taken from the line.
const (
	// Unknown is the key of a line whose breakdown cannot be told: no
	// browser in its agent, no country for its address.
	Unknown = "(unknown)"
	// Direct is the referrer of a line with no referrer, or a referrer of
	// the site's own.
	Direct = "direct"
)

// Bounds of the keys taken from the line's text.
const (
	// MaxHost is the longest referring host kept, as DNS allows.
	MaxHost = 253
	// MaxCampaign is the most bytes of a utm value kept, decoded.
	MaxCampaign = 64
	// MaxPath is the most bytes of a not-found path kept, as the API
	// takes paths.
	MaxPath = 2048
)

var names = [numBreakdowns]string{
	Referrer:    "referrer",
	Channel:     "channel",
	UTMSource:   "utm-source",
	UTMCampaign: "utm-campaign",
	Browser:     "browser",
	OS:          "os",
	Device:      "device",
	Country:     "country",
	Status:      "status",
	NotFound:    "not-found",
	Hour:        "hour",
	Weekday:     "weekday",
	RequestTime: "request-time",
}

// String returns the breakdown's name, as --breakdowns takes it.
func (b Breakdown) String() string {
	if b < numBreakdowns {
		return names[b]
	}
	return fmt.Sprintf("breakdown(%d)", uint8(b))
}

// All returns every breakdown, in order.
func All() []Breakdown {
	out := make([]Breakdown, numBreakdowns)
	for i := range out {
		out[i] = Breakdown(i)
	}
	return out
}

// Parse returns the breakdown of a name.
func Parse(name string) (Breakdown, bool) {
	for i, n := range names {
		if n == name {
			return Breakdown(i), true
		}
	}
	return 0, false
}

// set is a set of breakdowns, one bit each.
type set uint16

func (s set) has(b Breakdown) bool { return s&(1<<b) != 0 }

// The breakdowns that share their work: one look at the referrer, one scan
// of the query, one lookup of the agent, one zone offset.
const (
	referrerSet = set(1<<Referrer | 1<<Channel)
	campaignSet = set(1<<UTMSource | 1<<UTMCampaign)
	agentSet    = set(1<<Browser | 1<<OS | 1<<Device)
	clockSet    = set(1<<Hour | 1<<Weekday)
	// requestSet are the breakdowns that count every request, not only
	// page views (see PerRequest).
	requestSet = set(1<<Status | 1<<NotFound | 1<<RequestTime)
)
