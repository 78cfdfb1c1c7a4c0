package breakdown

import (
	"log/slog"
	"strconv"
	"time"

	useragent "github.com/medama-io/go-useragent"
	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/parser"
)

// Deps is what a Deriver needs besides its Config.
type Deps struct {
	// Location is the zone of the Hour and Weekday breakdowns, the
	// store's (--tz); nil is UTC.
	Location *time.Location
	// Logger tells, once, what is off and why (country without
	// --geoip); nil discards.
	Logger *slog.Logger
	// Timed says that the log format logs how long each request took
	// (parser.Format.HasRequestTime); without it the request-time
	// breakdown is off.
	Timed bool
}

// Deriver derives the keys of the breakdowns on from lines. It is
// immutable once made, so any number of goroutines share one, each with a
// Memo of its own.
type Deriver struct {
	on     set
	list   []Breakdown
	own    [][]byte // Config.OwnHosts, normalized
	loc    *time.Location
	agents *useragent.Parser
	geo    *maxminddb.Reader // nil: no country
}

// New makes a Deriver of the breakdowns cfg names. It opens the --geoip
// database, if any, which Close closes; without one the country breakdown
// is off.
func New(cfg Config, deps Deps) (*Deriver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	on, _ := cfg.set()
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := &Deriver{on: on, loc: deps.Location}
	if d.loc == nil {
		d.loc = time.UTC
	}
	for _, h := range cfg.OwnHosts {
		n, _ := ownHost(h)
		d.own = append(d.own, n)
	}
	if on.has(Country) {
		if cfg.GeoIP == "" {
			d.on &^= 1 << Country
			logger.Info("the country breakdown is off: no --geoip database given")
		} else {
			var err error
			if d.geo, err = openGeoIP(cfg.GeoIP); err != nil {
				return nil, err
			}
		}
	}
	if on.has(RequestTime) && !deps.Timed {
		d.on &^= 1 << RequestTime
		logger.Info("the request-time breakdown is off: the log format has no $request_time, %D or %T")
	}
	if d.on&agentSet != 0 {
		d.agents = useragent.NewParser()
	}
	for _, b := range All() {
		if d.on.has(b) {
			d.list = append(d.list, b)
		}
	}
	return d, nil
}

// Close closes the --geoip database, if any.
func (d *Deriver) Close() error {
	if d.geo == nil {
		return nil
	}
	return d.geo.Close()
}

// Breakdowns returns the breakdowns on, in order. The caller must not
// change it.
func (d *Deriver) Breakdowns() []Breakdown { return d.list }

// On reports whether breakdown b is on.
func (d *Deriver) On(b Breakdown) bool { return d.on.has(b) }

// Derive writes into k the key of each breakdown on for the line r (see
// Keys.Key). It allocates nothing when m remembers the line's agent and
// network and k's buffer has room.
func (d *Deriver) Derive(r *parser.Record, m *Memo, k *Keys) {
	k.reset()
	if m.owner != d {
		*m = Memo{owner: d}
	}
	if d.on&referrerSet != 0 {
		if !m.ref.same(r.Referer, r.VHost) {
			key, ch := d.source(m.ref.key[:0], r.Referer, r.VHost)
			m.ref.set(r.Referer, r.VHost, key, ch)
		}
		if d.on.has(Referrer) {
			k.addBytes(Referrer, m.ref.key)
		}
		d.add(k, Channel, m.ref.channel)
	}
	if d.on&campaignSet != 0 {
		d.campaign(r.Query, k)
	}
	if d.on&agentSet != 0 {
		a := m.agents.get(d.agents, r.UserAgent)
		d.add(k, Browser, a.browser)
		d.add(k, OS, a.os)
		d.add(k, Device, a.device)
	}
	if d.on.has(Country) {
		if cc := m.nets.country(d.geo, r.Host); cc[0] != 0 {
			k.addBytes(Country, cc[:])
		} else {
			k.add(Country, Unknown)
		}
	}
	if d.on.has(Status) {
		d.status(r.Status, k)
	}
	if d.on.has(NotFound) && r.Status == 404 && len(r.Path) > 0 {
		k.addBytes(NotFound, cutEscaped(r.Path, MaxPath))
	}
	if d.on&clockSet != 0 {
		d.clock(r.Time, m, k)
	}
	d.add(k, RequestTime, timeBucket(r.RequestTime))
}

// DeriveRequest writes into k the keys of the breakdowns on that count
// every request rather than page views alone (see PerRequest): status and
// not-found, for a line that is no page view. It costs no look at the
// agent, the address or the referrer.
func (d *Deriver) DeriveRequest(r *parser.Record, k *Keys) {
	k.reset()
	if d.on&requestSet == 0 {
		return
	}
	if d.on.has(Status) {
		d.status(r.Status, k)
	}
	if d.on.has(NotFound) && r.Status == 404 && len(r.Path) > 0 {
		k.addBytes(NotFound, cutEscaped(r.Path, MaxPath))
	}
	d.add(k, RequestTime, timeBucket(r.RequestTime))
}

// PerRequest reports whether breakdown b counts every request (status,
// not-found) rather than page views alone, people's visits: a browser, a
// referrer, a country or an hour is of who came and from where, and a
// crawler's or an asset's would swamp it, where a status or a missing page
// is of the server's answers, whoever asked.
func PerRequest(b Breakdown) bool { return requestSet.has(b) }

// add adds key s of b if b is on.
func (d *Deriver) add(k *Keys, b Breakdown, s string) {
	if d.on.has(b) {
		k.add(b, s)
	}
}

// source appends the Referrer key of a line with Referer ref and virtual
// host vhost to dst (its referring host, Direct or Unknown), and returns
// its channel.
func (d *Deriver) source(dst, ref, vhost []byte) ([]byte, string) {
	n := len(dst)
	dst, res := appendRefHost(dst, ref)
	switch {
	case res == hostNone || res == hostOK && d.ownHost(dst[n:], vhost):
		return append(dst[:n], Direct...), ChannelDirect
	case res == hostInvalid:
		return append(dst[:n], Unknown...), ChannelOther
	}
	return dst, channel(dst[n:])
}

// ownHost reports whether the normalized referring host is one of the
// site's own: one of Config.OwnHosts, or the line's own virtual host.
func (d *Deriver) ownHost(host, vhost []byte) bool {
	for _, h := range d.own {
		if string(h) == string(host) {
			return true
		}
	}
	if len(vhost) == 0 || len(vhost) > MaxHost {
		return false
	}
	var buf [MaxHost]byte
	v, res := appendRefHost(buf[:0], vhost)
	return res == hostOK && string(v) == string(host)
}

// campaign adds the utm_source and utm_campaign of the query, if it has
// them.
func (d *Deriver) campaign(query []byte, k *Keys) {
	if len(query) == 0 {
		return
	}
	c := scanCampaign(query)
	for _, p := range [...]struct {
		b Breakdown
		v []byte
	}{{UTMSource, c.source}, {UTMCampaign, c.name}} {
		if p.v == nil || !d.on.has(p.b) {
			continue
		}
		start := k.begin()
		var ok bool
		if k.buf, ok = appendCampaignValue(k.buf, p.v); ok {
			k.end(p.b, start)
		}
	}
}

// status adds the status as three digits, or Unknown for one out of range.
func (d *Deriver) status(s int, k *Keys) {
	switch {
	case s >= 100 && s < 100+len(statuses):
		k.add(Status, statuses[s-100])
	case s >= 100 && s <= 999:
		start := k.begin()
		k.buf = strconv.AppendInt(k.buf, int64(s), 10)
		k.end(Status, start)
	default:
		k.add(Status, Unknown)
	}
}

// statuses are the keys of the statuses of 100 to 599, written once.
var statuses = func() (s [500]string) {
	for i := range s {
		s[i] = strconv.Itoa(100 + i)
	}
	return s
}()

// clock adds the hour and weekday of t in the Deriver's zone, from one
// lookup of the zone's offset.
func (d *Deriver) clock(t time.Time, m *Memo, k *Keys) {
	sec := t.Unix() + m.zone.offset(t, d.loc)
	day := logtally.FloorDiv(sec, 86400)
	d.add(k, Hour, hours[(sec-day*86400)/3600])
	// 1 January 1970 was a Thursday.
	d.add(k, Weekday, weekdays[(day%7+7+3)%7])
}

var (
	hours    = [24]string{"00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "23"}
	weekdays = [7]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
)

// cutEscaped returns text in logtally's escaped form cut to at most n
// bytes, splitting neither a UTF-8 sequence nor a \xHH escape.
func cutEscaped(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = cutUTF8(b, n)
	for i := len(b) - 1; i >= 0 && i > len(b)-4; i-- {
		if b[i] == '\\' {
			return b[:i]
		}
	}
	return b
}
