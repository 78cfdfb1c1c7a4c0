package breakdown

import (
	"hash/maphash"
	"unsafe"

	useragent "github.com/medama-io/go-useragent"
	"github.com/medama-io/go-useragent/agents"
)

// agent is what a user agent tells, as keys.
type agent struct {
	browser, os, device string
}

// unknownAgent is the agent of a line that sends none.
var unknownAgent = agent{Unknown, Unknown, Unknown}

// devices are the keys of the device classes the parser tells.
var devices = map[agents.Device]string{
	agents.DeviceDesktop: "desktop",
	agents.DeviceMobile:  "mobile",
	agents.DeviceTablet:  "tablet",
	agents.DeviceTV:      "tv",
	agents.DeviceBot:     "bot",
}

// parseAgent tells the agent ua. The parser's names are kept as they are
// ("Chrome", "Samsung Browser", "MacOS", "iOS"); the device classes are in
// lower case. Whatever it cannot tell is Unknown.
func parseAgent(p *useragent.Parser, ua string) agent {
	if ua == "" || ua == "-" {
		return unknownAgent
	}
	u := p.Parse(ua)
	a := agent{browser: string(u.Browser()), os: string(u.OS()), device: devices[u.Device()]}
	if a.browser == "" {
		a.browser = Unknown
	}
	if a.os == "" {
		a.os = Unknown
	}
	if a.device == "" {
		a.device = Unknown
	}
	return a
}

// The agent cache holds agentSets sets of agentWays agents each: at most
// 4,096 agents of at most agentMax bytes, so about 2.3 MiB at worst. A
// log's people use a few hundred distinct agents a day, which stay; a
// flood of distinct agents (a scanner's random ones) evicts the least
// recently used agent of a set, and costs a parse each, in bounded memory.
const (
	agentSets = 1024
	agentWays = 4
	// agentMax is the longest agent remembered: browsers send a few
	// hundred bytes. A longer one is parsed each time, and not copied.
	agentMax = 512
)

// agentEntry is one remembered agent. An empty entry has ua "", which is
// never remembered.
type agentEntry struct {
	hash uint64
	ua   string
	a    agent
}

// agentCache remembers what the agents seen lately tell, for one
// goroutine. Its zero value is ready: its table is made on first use.
type agentCache struct {
	seed maphash.Seed
	sets *[agentSets][agentWays]agentEntry
	// last is the entry of the line before's agent: a page and its
	// assets come one after another from one browser, so it is often the
	// next line's too, which then costs a compare and no hash. (The entry
	// may have been given to another agent since: the compare tells.)
	last *agentEntry
}

// get returns what ua tells, from the cache if it holds ua (a hash and
// a compare, with no allocation), else parsed and remembered.
func (c *agentCache) get(p *useragent.Parser, ua []byte) agent {
	if len(ua) == 0 || len(ua) == 1 && ua[0] == '-' {
		return unknownAgent
	}
	if len(ua) > agentMax {
		// The parser only reads its argument and keeps none of it, so
		// the line's bytes are lent to it rather than copied.
		return parseAgent(p, unsafe.String(unsafe.SliceData(ua), len(ua)))
	}
	if c.sets == nil {
		c.seed = maphash.MakeSeed()
		c.sets = new([agentSets][agentWays]agentEntry)
	}
	if c.last != nil && c.last.ua == string(ua) {
		return c.last.a
	}
	h := maphash.Bytes(c.seed, ua)
	s := &c.sets[h%agentSets]
	for i := range s {
		if s[i].hash == h && s[i].ua == string(ua) {
			if i > 0 {
				e := s[i]
				copy(s[1:i+1], s[:i])
				s[0] = e
			}
			c.last = &s[0]
			return s[0].a
		}
	}
	e := agentEntry{hash: h, ua: string(ua)}
	e.a = parseAgent(p, e.ua)
	copy(s[1:], s[:agentWays-1])
	s[0] = e
	c.last = &s[0]
	return e.a
}

// len returns how many agents c holds.
func (c *agentCache) len() int {
	n := 0
	if c.sets != nil {
		for _, s := range c.sets {
			for _, e := range s {
				if e.ua != "" {
					n++
				}
			}
		}
	}
	return n
}
