package parser

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/logtally/logtally"
)

// role is what a field means to a Record. Fields with roleNone are matched
// but their values are not used.
type role uint8

const (
	roleNone role = iota
	roleHost
	roleTimeLocal
	roleTimeISO
	roleMsec
	roleRequest
	roleStatus
	roleBodyBytes
	roleBytesSent
	roleReferer
	roleUserAgent
	roleXFF
	roleVHost
	roleRequestTime   // seconds with a fraction: nginx $request_time
	roleRequestTimeUS // microseconds: Apache %D, %{us}T
	roleRequestTimeMS // milliseconds: Apache %{ms}T
	roleRequestTimeS  // whole seconds: Apache %T, %{s}T
	numRoles
)

// roles maps variable names to roles.
var roles = map[string]role{
	"remote_addr":          roleHost,
	"time_local":           roleTimeLocal,
	"time_iso8601":         roleTimeISO,
	"msec":                 roleMsec,
	"request":              roleRequest,
	"status":               roleStatus,
	"body_bytes_sent":      roleBodyBytes,
	"bytes_sent":           roleBytesSent,
	"http_referer":         roleReferer,
	"http_user_agent":      roleUserAgent,
	"http_x_forwarded_for": roleXFF,
	"server_name":          roleVHost,
	"host":                 roleVHost,
	"http_host":            roleVHost,
	"request_time":         roleRequestTime,
	"request_time_us":      roleRequestTimeUS,
	"request_time_ms":      roleRequestTimeMS,
	"request_time_s":       roleRequestTimeS,
}

// values holds each role's field value for one line; set has bit r for
// every role r the format has.
type values struct {
	line  []byte
	span  [numRoles][2]int32 // a field's value is line[span[0]:span[1]]
	set   uint32
	plain bool // no field holds an escape: the line has no backslash
}

// v returns the value of role ro, empty if the format does not have it.
func (vals *values) v(ro role) []byte { return vals.line[vals.span[ro][0]:vals.span[ro][1]] }

// Errors with detail, made once so that rejecting a line does not allocate.
var (
	errStatus      = fmt.Errorf("%w: status", ErrNumber)
	errBytes       = fmt.Errorf("%w: bytes", ErrNumber)
	errRequestTime = fmt.Errorf("%w: request time", ErrNumber)
	errTimeLocal   = fmt.Errorf("%w: $time_local", ErrTimestamp)
	errTimeISO     = fmt.Errorf("%w: $time_iso8601", ErrTimestamp)
	errMsec        = fmt.Errorf("%w: $msec", ErrTimestamp)
	errMethod      = fmt.Errorf("%w: method", ErrRequest)
	errTarget      = fmt.Errorf("%w: target", ErrRequest)
	errProtocol    = fmt.Errorf("%w: protocol", ErrRequest)
)

// assemble decodes the values of one line into r. Both the compiled scanner
// and the gonx fallback end here, so they differ only in how they split a
// line, never in what a field means.
func (f *Format) assemble(vals *values, r *Record) error {
	// Every field is set below, which is cheaper than r.Reset.
	r.scratch = r.scratch[:0]
	if err := f.host(vals, r); err != nil {
		return err
	}
	if err := vals.time(r); err != nil {
		return err
	}
	before := len(r.scratch)
	if err := splitRequest(f.text(r, vals, vals.v(roleRequest)), r); err != nil {
		return err
	}
	if logtally.NeedsEscape(r.Path) {
		r.escapePath()
	}
	r.pathCopied = len(r.scratch) > before
	r.Status, r.Bytes, r.RequestTime = 0, 0, 0
	r.Referer, r.UserAgent, r.VHost = nil, nil, nil
	if err := vals.response(r); err != nil {
		return err
	}
	f.headers(vals, r)
	if vals.set&requestTimeRoles == 0 {
		return nil
	}
	return vals.requestTime(r)
}

// requestTimeRoles has a bit for each role of a request time field.
const requestTimeRoles = 1<<roleRequestTime | 1<<roleRequestTimeUS | 1<<roleRequestTimeMS | 1<<roleRequestTimeS

// has reports whether the format has a field of role ro.
func (vals *values) has(ro role) bool { return vals.set&(1<<ro) != 0 }

// host sets r.Host: the client address, or with real_ip_from_xff the
// left-most valid address of X-Forwarded-For.
func (f *Format) host(vals *values, r *Record) error {
	r.Host = f.text(r, vals, vals.v(roleHost))
	if len(r.Host) == 0 || r.Host[0] == '-' || !plainHost(r.Host) {
		return ErrHost
	}
	if f.realIPFromXFF {
		if ip := leftmostIP(vals.v(roleXFF)); ip != nil {
			r.Host = ip
		}
	}
	return nil
}

// time sets r.Time from whichever time field the format has.
func (vals *values) time(r *Record) error {
	var ok bool
	switch {
	case vals.has(roleTimeLocal):
		if r.Time, ok = r.minute.timeLocal(vals.v(roleTimeLocal)); !ok {
			return errTimeLocal
		}
	case vals.has(roleTimeISO):
		if r.Time, ok = timeISO(vals.v(roleTimeISO)); !ok {
			return errTimeISO
		}
	default:
		if r.Time, ok = msec(vals.v(roleMsec)); !ok {
			return errMsec
		}
	}
	return nil
}

// response sets r.Status and r.Bytes ($body_bytes_sent, else $bytes_sent),
// if the format has them.
func (vals *values) response(r *Record) error {
	if vals.has(roleStatus) {
		n, ok := decimal(vals.v(roleStatus), 3)
		if !ok || n < 100 {
			return errStatus
		}
		r.Status = int(n)
	}
	bytesField := roleBodyBytes
	if !vals.has(roleBodyBytes) {
		bytesField = roleBytesSent
	}
	if v := vals.v(bytesField); vals.has(bytesField) && !(len(v) == 1 && v[0] == '-') {
		n, ok := decimal(v, 19)
		if !ok {
			return errBytes
		}
		r.Bytes = n
	}
	return nil
}

// headers sets the text fields a format may have: r.Referer, r.UserAgent
// and r.VHost.
func (f *Format) headers(vals *values, r *Record) {
	if vals.has(roleReferer) {
		r.Referer = f.text(r, vals, vals.v(roleReferer))
	}
	if vals.has(roleUserAgent) {
		r.UserAgent = f.text(r, vals, vals.v(roleUserAgent))
	}
	if vals.has(roleVHost) {
		r.VHost = f.text(r, vals, vals.v(roleVHost))
	}
}

// requestTime sets r.RequestTime from whichever request time field the
// format has, in its unit.
func (vals *values) requestTime(r *Record) error {
	for ro := roleRequestTime; ro <= roleRequestTimeS; ro++ {
		if v := vals.v(ro); vals.has(ro) && !(len(v) == 1 && v[0] == '-') {
			var ok bool
			if r.RequestTime, ok = duration(v, ro); !ok {
				return errRequestTime
			}
		}
	}
	return nil
}

// text returns v with its escapes decoded. Most fields have none and are
// returned as they are; the others are decoded into r's scratch buffer.
func (f *Format) text(r *Record, vals *values, v []byte) []byte {
	if vals.plain || bytes.IndexByte(v, '\\') < 0 {
		return v
	}
	start := len(r.scratch)
	r.scratch = unescape(r.scratch, v)
	// A later append may move scratch; this slice keeps the old array alive.
	return r.scratch[start:len(r.scratch):len(r.scratch)]
}

// escapePath puts r.Path, decoded, in the escaped form of text that the
// stores and the API hold (see logtally.AppendEscaped): a raw byte, a
// control byte or a backslash as \xHH. It is called only for a path that
// needs it (logtally.NeedsEscape); nearly every path is left as it is.
func (r *Record) escapePath() {
	start := len(r.scratch)
	// r.Path may lie in scratch, below start: appending does not touch it.
	r.scratch = logtally.AppendEscaped(r.scratch, r.Path)
	r.Path = r.scratch[start:len(r.scratch):len(r.scratch)]
}

// unescape appends s to dst with the escapes nginx and Apache write decoded:
// \xHH (nginx default, Apache), \" \\ \/ \n \t \r and \uXXXX (nginx
// escape=json). Anything else is kept as written.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			dst = append(dst, c)
			continue
		}
		switch e := s[i+1]; e {
		case 'x':
			if i+3 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) {
				dst = append(dst, unhex(s[i+2])<<4|unhex(s[i+3]))
				i += 3
				continue
			}
		case 'u':
			if i+5 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
				r := rune(unhex(s[i+2]))<<12 | rune(unhex(s[i+3]))<<8 | rune(unhex(s[i+4]))<<4 | rune(unhex(s[i+5]))
				dst = utf8.AppendRune(dst, r)
				i += 5
				continue
			}
		case '"', '\\', '/':
			dst = append(dst, e)
			i++
			continue
		case 'n':
			dst = append(dst, '\n')
			i++
			continue
		case 't':
			dst = append(dst, '\t')
			i++
			continue
		case 'r':
			dst = append(dst, '\r')
			i++
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// plainHost reports whether h can be an address or host name: no spaces,
// quotes or control bytes, which would mean the line was split wrongly.
func plainHost(h []byte) bool {
	for _, c := range h {
		if c <= ' ' || c == '"' || c >= 0x7f {
			return false
		}
	}
	return true
}

// leftmostIP returns the first valid IP address in an X-Forwarded-For list
// ("client, proxy1, proxy2"), or nil if there is none.
func leftmostIP(xff []byte) []byte {
	for len(xff) > 0 {
		var part []byte
		part, xff, _ = bytes.Cut(xff, []byte{','})
		part = bytes.TrimSpace(part)
		if validIP(part) {
			return part
		}
	}
	return nil
}

// validIP reports whether b is an IPv4 or IPv6 address. A cheap byte check
// first turns away "unknown", "-" and host names without calling netip.
func validIP(b []byte) bool {
	if len(b) == 0 || len(b) > len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255") {
		return false
	}
	for _, c := range b {
		if !isHex(c) && c != '.' && c != ':' {
			return false
		}
	}
	// netip does not keep the string when it succeeds, so viewing b as a
	// string without a copy is safe.
	_, err := netip.ParseAddr(unsafe.String(&b[0], len(b)))
	return err == nil
}

// decimal parses a decimal number of at most max digits.
func decimal(b []byte, max int) (int64, bool) {
	if len(b) == 0 || len(b) > max {
		return 0, false
	}
	var n int64
	if len(b) < 19 { // cannot overflow: no check a digit
		for _, c := range b {
			d := c - '0'
			if d > 9 {
				return 0, false
			}
			n = n*10 + int64(d)
		}
		return n, true
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-int64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// fixed parses "SECONDS[.FRACTION]" into whole seconds and nanoseconds.
func fixed(b []byte) (sec, nsec int64, ok bool) {
	whole, frac, dot := bytes.Cut(b, []byte{'.'})
	if sec, ok = decimal(whole, 12); !ok {
		return 0, 0, false
	}
	if dot {
		if len(frac) > 9 {
			return 0, 0, false
		}
		if nsec, ok = decimal(frac, 9); !ok {
			return 0, 0, false
		}
		for i := len(frac); i < 9; i++ {
			nsec *= 10
		}
	}
	return sec, nsec, true
}

// duration parses a request time written in the unit of its role.
func duration(b []byte, ro role) (time.Duration, bool) {
	switch ro {
	case roleRequestTime:
		sec, nsec, ok := fixed(b)
		if sec >= math.MaxInt64/int64(time.Second) {
			return 0, false // past time.Duration's 292 years: no request took so long
		}
		return time.Duration(sec)*time.Second + time.Duration(nsec), ok
	case roleRequestTimeUS:
		n, ok := decimal(b, 15)
		return time.Duration(n) * time.Microsecond, ok
	case roleRequestTimeMS:
		n, ok := decimal(b, 12)
		return time.Duration(n) * time.Millisecond, ok
	default:
		n, ok := decimal(b, 9)
		return time.Duration(n) * time.Second, ok
	}
}

// msec parses nginx $msec, "1700000000.123", and Apache %{sec}t.
func msec(b []byte) (time.Time, bool) {
	sec, nsec, ok := fixed(b)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(sec, nsec).UTC(), true
}

// timeLocal parses nginx $time_local and Apache %t without brackets,
// "10/Oct/2026:13:55:36 -0700", by hand: time.Parse allocates on errors and
// is several times slower, and this layout never varies.
func timeLocal(b []byte) (time.Time, bool) {
	var c minuteCache
	return c.timeLocal(b)
}

// timeLocal is the package timeLocal, which first looks for the minute in
// c and remembers it there.
func (c *minuteCache) timeLocal(b []byte) (time.Time, bool) {
	if len(b) != len("02/Jan/2006:15:04:05 -0700") || b[2] != '/' || b[6] != '/' || b[11] != ':' ||
		b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return time.Time{}, false
	}
	key := [3]uint64{
		binary.LittleEndian.Uint64(b[0:8]),
		binary.LittleEndian.Uint64(b[8:16]),
		uint64(b[16]) | uint64(binary.LittleEndian.Uint32(b[21:25]))<<8 | uint64(b[25])<<40,
	}
	if key == c.key {
		s, ok := digits(b[18:20])
		if !ok || s > 59 {
			return time.Time{}, false
		}
		return time.Unix(c.sec+s, 0).UTC(), true
	}
	mon := month(b[3:6])
	day, ok1 := digits(b[0:2])
	year, ok2 := digits(b[7:11])
	off, ok3 := offset(b[21], b[22:24], b[24:26])
	if mon == 0 || !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	t, ok := civil(year, mon, day, b[12:14], b[15:17], b[18:20], off)
	if ok {
		s, _ := digits(b[18:20])
		c.key, c.sec = key, t.Unix()-s
	}
	return t, ok
}

// timeISO parses nginx $time_iso8601, "2026-10-10T13:55:36-07:00", and the
// same with "Z" for UTC.
func timeISO(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	var off int64
	switch {
	case len(b) == 20 && b[19] == 'Z':
	case len(b) == 25 && b[22] == ':':
		var ok bool
		if off, ok = offset(b[19], b[20:22], b[23:25]); !ok {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	year, ok1 := digits(b[0:4])
	mon, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	return civil(year, mon, day, b[11:13], b[14:16], b[17:19], off)
}

// civil converts a date and time of day at a UTC offset (in seconds) to a
// UTC time, checking every part's range.
func civil(year, mon, day int64, hh, mm, ss []byte, off int64) (time.Time, bool) {
	h, ok1 := digits(hh)
	m, ok2 := digits(mm)
	s, ok3 := digits(ss)
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || s > 59 || mon < 1 || mon > 12 || day < 1 || day > daysIn(year, mon) {
		return time.Time{}, false
	}
	sec := daysFromCivil(year, mon, day)*86400 + h*3600 + m*60 + s - off
	return time.Unix(sec, 0).UTC(), true
}

// digits parses a fixed-width decimal field.
func digits(b []byte) (int64, bool) {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// offset parses a UTC offset "+hhmm" (or "+hh:mm" split by the caller) into
// seconds east of UTC.
func offset(sign byte, hh, mm []byte) (int64, bool) {
	h, ok1 := digits(hh)
	m, ok2 := digits(mm)
	if !ok1 || !ok2 || h > 23 || m > 59 || sign != '+' && sign != '-' {
		return 0, false
	}
	off := h*3600 + m*60
	if sign == '-' {
		off = -off
	}
	return off, true
}

// month returns 1-12 for an English month abbreviation, 0 otherwise.
func month(b []byte) int64 {
	switch string(b) { // the compiler does not copy b for a switch
	case "Jan":
		return 1
	case "Feb":
		return 2
	case "Mar":
		return 3
	case "Apr":
		return 4
	case "May":
		return 5
	case "Jun":
		return 6
	case "Jul":
		return 7
	case "Aug":
		return 8
	case "Sep":
		return 9
	case "Oct":
		return 10
	case "Nov":
		return 11
	case "Dec":
		return 12
	}
	return 0
}

func daysIn(year, mon int64) int64 {
	switch mon {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the number of days from 1970-01-01 to the given
// proleptic Gregorian date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

var (
	httpScheme  = []byte("http://")
	httpsScheme = []byte("https://")
	slash       = []byte{'/'}
)

// splitRequest splits "METHOD TARGET PROTOCOL" into r's request fields.
// It runs for every line, so it finds the spaces and the query itself:
// the method in the pass that checks its letters, the rest by
// bytes.IndexByte, not bytes.Cut, whose calls cost more than the search.
func splitRequest(req []byte, r *Record) error {
	m := 0
	for m < len(req) && 'A' <= req[m] && req[m] <= 'Z' {
		m++
	}
	if m == 0 || m == len(req) || req[m] != ' ' {
		return errMethod
	}
	method, rest := req[:m], req[m+1:]
	t := bytes.IndexByte(rest, ' ')
	if t <= 0 {
		return errTarget
	}
	target, proto := rest[:t], rest[t+1:]
	if len(proto) < 5 || proto[0] != 'H' || proto[1] != 'T' || proto[2] != 'T' || proto[3] != 'P' || proto[4] != '/' {
		return errProtocol
	}
	// An absolute-form target (proxy requests) counts under its path.
	for _, scheme := range [...][]byte{httpScheme, httpsScheme} {
		if target[0] == '/' {
			break
		}
		if rest, ok := bytes.CutPrefix(target, scheme); ok {
			if i := bytes.IndexByte(rest, '/'); i >= 0 {
				target = rest[i:]
			} else {
				target = slash
			}
		}
	}
	r.Method, r.Protocol = method, proto
	r.Path, r.Query = target, nil
	if q := bytes.IndexByte(target, '?'); q >= 0 {
		r.Path, r.Query = target[:q], target[q+1:]
	}
	if len(r.Path) == 0 {
		return errTarget
	}
	return nil
}
