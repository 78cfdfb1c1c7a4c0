package breakdown

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// DefaultBreakdowns are the breakdowns on by default: those that keep a
// replay within 80% of its speed without breakdowns (docs/breakdowns.md
// has the figures): the status of every request and the hour of page
// views, whose keys cost a lookup in a table. Country is on but derived
// only with --geoip, whose operator asked for it. The others cost more
// per page view (a scan of the Referer, a lookup of the agent, one more
// key counted) and are the operator's to turn on; the campaign parameters
// and not-found paths are besides whatever anyone puts in a URL, so a
// scanner's flood of requests mints as many keys as it makes requests.
var DefaultBreakdowns = []string{"country", "status", "hour"}

// Config is which breakdowns the operator wants, and what they need.
type Config struct {
	// Breakdowns are the names of the breakdowns on (see Breakdown.String).
	Breakdowns []string
	// GeoIP is the path of a MaxMind-format country database
	// (GeoLite2-Country, DB-IP Lite country, or a City database); empty:
	// no country.
	GeoIP string
	// OwnHosts are the site's own hosts: a referrer from one of them is
	// Direct, as is one from the line's own virtual host.
	OwnHosts []string
}

// DefaultConfig returns the documented defaults: DefaultBreakdowns, no
// database, no own hosts but each line's virtual host.
func DefaultConfig() Config {
	return Config{Breakdowns: append([]string(nil), DefaultBreakdowns...)}
}

// RegisterFlags sets c to the defaults and registers its flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.Var((*listFlag)(&c.Breakdowns), "breakdowns",
		"comma-separated `list` of the breakdowns to derive from each line: "+strings.Join(names[:], ", ")+"; empty: none")
	fs.StringVar(&c.GeoIP, "geoip", c.GeoIP,
		"`file` of a MaxMind-format country database (GeoLite2-Country, DB-IP Lite country) for the country breakdown; none: no country")
	fs.Var((*listFlag)(&c.OwnHosts), "own-hosts",
		"comma-separated `list` of the site's own host names: a referrer from one of them is direct, as one from the line's own host is")
}

// RegisterReadFlags registers --breakdowns alone, empty by default: what
// a command that reads stored breakdowns (report) takes, which derives
// nothing and so needs no --geoip or --own-hosts.
func (c *Config) RegisterReadFlags(fs *flag.FlagSet) {
	*c = Config{}
	fs.Var((*listFlag)(&c.Breakdowns), "breakdowns",
		"comma-separated `list` of the stored breakdowns to report a section of: "+strings.Join(names[:], ", ")+"; empty: none")
}

// listFlag is a comma-separated list flag. Setting it replaces the default
// rather than adding to it.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = nil
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l = append(*l, f)
		}
	}
	return nil
}

// Validate reports names and hosts that cannot be used. It reads no file:
// New opens the database.
func (c *Config) Validate() error {
	var errs []error
	on, err := c.set()
	if err != nil {
		errs = append(errs, err)
	}
	if c.GeoIP != "" && err == nil && !on.has(Country) {
		errs = append(errs, fmt.Errorf("--geoip %s: --breakdowns has no country; add country to --breakdowns, or drop --geoip", c.GeoIP))
	}
	for _, h := range c.OwnHosts {
		if _, ok := ownHost(h); !ok {
			errs = append(errs, fmt.Errorf("--own-hosts %q: not a host name; give names such as example.com, without scheme or path", h))
		}
	}
	return errors.Join(errs...)
}

// set returns the breakdowns named in c, or an error naming each unknown
// one.
func (c *Config) set() (set, error) {
	var s set
	var errs []error
	for _, n := range c.Breakdowns {
		b, ok := Parse(strings.ToLower(n))
		if !ok {
			errs = append(errs, fmt.Errorf("--breakdowns %q: unknown breakdown; choose from %s", n, strings.Join(names[:], ", ")))
			continue
		}
		s |= 1 << b
	}
	return s, errors.Join(errs...)
}
