package parser

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strings"

	"github.com/satyrius/gonx"
)

// Preset formats.
const (
	// Combined is the nginx and Apache "combined" format.
	Combined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`
	// Common is the Common Log Format.
	Common = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`
	// VhostCombined is Apache's vhost_combined, in Apache LogFormat syntax
	// as Debian's apache2.conf defines it.
	VhostCombined = `%v:%p %h %l %u %t "%r" %>s %O "%{Referer}i" "%{User-Agent}i"`
	// Main is the "main" format of the nginx.conf that nginx ships.
	Main = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_forwarded_for"`
)

// Presets maps the names accepted by --format to their format strings.
var Presets = map[string]string{
	"combined":       Combined,
	"common":         Common,
	"vhost_combined": VhostCombined,
	"main":           Main,
}

// Config selects the log format. Its zero value is not useful; RegisterFlags
// sets the defaults.
type Config struct {
	// Format is a preset name, an nginx log_format string, or an Apache
	// LogFormat string (told apart by its '%' directives and no '$').
	Format string
	// NginxConf, if set, names an nginx configuration to read the format
	// from, by LogFormatName; it takes the place of Format.
	NginxConf     string
	LogFormatName string
	// RealIPFromXFF counts a line under the left-most valid address of
	// $http_x_forwarded_for, for sites behind a proxy or CDN. The format must
	// log that header; lines without a valid address in it keep $remote_addr.
	RealIPFromXFF bool
	// SiteField names the variable whose value is a line's site, in nginx
	// ($host, $server_name, $http_host) or Apache (%v, %V, %{Host}i)
	// terms: Record.VHost is that field alone. Empty: VHost is whichever of
	// them the format has.
	SiteField string
	// Logger, if set, is told once when the format cannot be compiled into
	// the fast scanner and falls back to gonx.
	Logger *slog.Logger
}

// RegisterFlags registers the parser's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Format, "format", "combined",
		"log `format`: combined, common, vhost_combined, main, an nginx log_format string or an Apache LogFormat string")
	fs.StringVar(&c.NginxConf, "nginx-conf", "", "read the log format from this nginx configuration `file` instead of --format (see --log-format-name)")
	fs.StringVar(&c.LogFormatName, "log-format-name", "",
		"`name` of the log_format to read from --nginx-conf (and the files it includes); by default the one its access_log lines use, nginx's combined if they name none")
	fs.StringVar(&c.SiteField, "site-field", "",
		"count each line under the site its `variable` names: $host, $server_name or $http_host (nginx), %v, %V or %{Host}i (Apache)")
	fs.BoolVar(&c.RealIPFromXFF, "real-ip-from-xff", false,
		"count clients by the left-most valid address in $http_x_forwarded_for (behind a proxy or CDN)")
}

// Compile compiles the configured format.
func (c Config) Compile() (*Format, error) {
	spec, escape := c.Format, escapeDefault
	if c.NginxConf != "" {
		var err error
		if spec, escape, err = c.nginxFormat(); err != nil {
			return nil, err
		}
	}
	vhost := ""
	if c.SiteField != "" {
		var ok bool
		if vhost, ok = siteFields[c.SiteField]; !ok {
			return nil, fmt.Errorf("--site-field %q: want $host, $server_name or $http_host (nginx), or %%v, %%V or %%{Host}i (Apache): %w",
				c.SiteField, ErrBadSpec)
		}
	}
	f, err := compile(spec, escape, vhost)
	if err != nil {
		return nil, err
	}
	if vhost != "" && !f.has(vhost) {
		return nil, fmt.Errorf("--site-field %s: the log format %q does not log it; add it to the format, or map files to sites with --site NAME=PATH: %w",
			c.SiteField, f, ErrBadSpec)
	}
	if c.RealIPFromXFF {
		if f.set&(1<<roleXFF) == 0 {
			return nil, fmt.Errorf("format %q: --real-ip-from-xff needs $http_x_forwarded_for: %w", f, ErrBadSpec)
		}
		f.realIPFromXFF = true
	}
	if f.fields == nil && c.Logger != nil {
		c.Logger.Warn("log format has two fields with no text between them; parsing it with gonx, which is much slower",
			"format", f.String())
	}
	return f, nil
}

// nginxFormat reads the format named LogFormatName, or if none the one the
// access_log lines use, from the configuration NginxConf and the files it
// includes.
func (c Config) nginxFormat() (spec, escape string, err error) {
	words, err := readNginxConf(c.NginxConf)
	if err != nil {
		return "", "", err
	}
	name := c.LogFormatName
	if name == "" {
		if name, err = chooseLogFormat(words); err != nil {
			return "", "", fmt.Errorf("%s: %w", c.NginxConf, err)
		}
	}
	spec, escape, err = logFormatIn(words, name)
	if errors.Is(err, errNoLogFormat) && name == "combined" {
		return Combined, escapeDefault, nil // nginx predefines it
	}
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", c.NginxConf, err)
	}
	return spec, escape, nil
}

// Format is a compiled log format. It is safe for concurrent use.
type Format struct {
	toks          []token // the format, in nginx terms
	escape        string  // escapeDefault, escapeJSON or escapeNone
	set           uint32  // bit r for every role r in the format
	realIPFromXFF bool
	vhost         string // the variable that fills Record.VHost; "": any

	// The compiled scanner: the literal the line starts with, then each
	// field with the literal that ends it. nil if the format cannot be
	// compiled and Parse uses gonx.
	prefix []byte
	fields []field

	// gonx parses with the same format. It is the fallback, and the
	// reference the differential test compares the scanner with. It is nil
	// if gonx cannot handle a format the scanner can.
	gonx *gonx.Parser
}

// field is one step of the compiled scanner.
type field struct {
	role  role
	until []byte // the literal after the field; empty only for a last field
}

// New compiles a format given as a preset name, an nginx log_format string,
// or an Apache LogFormat string. The format must log the client address, a
// time ($time_local, $time_iso8601 or $msec) and the request line, which
// every count depends on.
func New(spec string) (*Format, error) { return Config{Format: spec}.Compile() }

// siteFields maps what --site-field takes to the variable it names.
var siteFields = map[string]string{
	"$host": "host", "host": "host", "%V": "host",
	"$server_name": "server_name", "server_name": "server_name", "%v": "server_name",
	"$http_host": "http_host", "http_host": "http_host", "%{Host}i": "http_host", "%{host}i": "http_host",
}

// has reports whether the format logs the variable name.
func (f *Format) has(name string) bool {
	for _, t := range f.toks {
		if t.name == name {
			return true
		}
	}
	return false
}

// role returns what the variable name means to a Record: its role, but
// with a site field chosen, no role for the other host variables.
func (f *Format) role(name string) role {
	r := roles[name]
	if r == roleVHost && f.vhost != "" && name != f.vhost {
		return roleNone
	}
	return r
}

// compile compiles spec; vhost, if not empty, is the one variable that
// fills Record.VHost.
func compile(spec, escape, vhost string) (*Format, error) {
	if p, ok := Presets[spec]; ok {
		spec = p
	}
	tokens := nginxTokens
	if isApache(spec) {
		tokens = apacheTokens
	}
	toks, err := tokens(spec)
	if err != nil {
		return nil, err
	}
	f := &Format{toks: toks, escape: escape, vhost: vhost}
	for _, t := range toks {
		if t.name != "" {
			f.set |= 1 << f.role(t.name)
		}
	}
	for _, need := range []struct {
		roles uint32
		what  string
	}{
		{1 << roleHost, "$remote_addr"},
		{1<<roleTimeLocal | 1<<roleTimeISO | 1<<roleMsec, "$time_local, $time_iso8601 or $msec"},
		{1 << roleRequest, "$request"},
	} {
		if f.set&need.roles == 0 {
			return nil, fmt.Errorf("format %q: missing %s: %w", spec, need.what, ErrBadSpec)
		}
	}
	f.compileScanner()
	f.gonx = newGonx(toks)
	if f.fields == nil && f.gonx == nil {
		return nil, fmt.Errorf("format %q: cannot be parsed: %w", spec, ErrBadSpec)
	}
	return f, nil
}

// compileScanner builds the scanner's steps, or leaves f.fields nil if two
// fields follow each other with no literal text to tell where one ends.
func (f *Format) compileScanner() {
	toks := f.toks
	if len(toks) > 0 && toks[0].name == "" {
		f.prefix = []byte(toks[0].lit)
		toks = toks[1:]
	}
	var fields []field
	for i := 0; i < len(toks); i++ {
		fd := field{role: f.role(toks[i].name)}
		if i+1 < len(toks) {
			if toks[i+1].name != "" {
				return
			}
			fd.until = []byte(toks[i+1].lit)
			i++
		}
		fields = append(fields, fd)
	}
	f.fields = fields
}

// gonxAdjacent and gonxSplit are the regexps gonx.NewParser uses to pull
// apart two variables with nothing between them.
var (
	gonxAdjacent = regexp.MustCompile(`[A-Za-z0-9_]\$[A-Za-z0-9_]`)
	gonxSplit    = regexp.MustCompile(`([A-Za-z0-9_])\$([A-Za-z0-9_]+)(\\?([^$\\A-Za-z0-9_]))`)
)

// newGonx returns a gonx parser for the format, or nil if gonx cannot build
// one: it panics on a regexp it cannot compile, and loops forever on two
// adjacent variables that are not followed by a literal, which is checked
// here first by running its rewriting loop with a bound.
func newGonx(toks []token) (p *gonx.Parser) {
	defer func() {
		if recover() != nil {
			p = nil
		}
	}()
	var sb strings.Builder
	for _, t := range toks {
		if t.name == "" {
			sb.WriteString(t.lit)
		} else {
			sb.WriteString("$" + t.name)
		}
	}
	spec := sb.String()
	s := spec
	for i := 0; gonxAdjacent.MatchString(s); i++ {
		next := gonxSplit.ReplaceAllString(s, "${1}${3} _PLACEHOLDER___ $$${2}${3}")
		if next == s || i == 100 {
			return nil
		}
		s = next
	}
	return gonx.NewParser(spec)
}

// String returns the format in nginx log_format syntax; an Apache format is
// shown translated.
func (f *Format) String() string { return render(f.toks) }

// HasUserAgent reports whether the format logs the user agent
// ($http_user_agent, %{User-Agent}i): `common`, for one, does not.
func (f *Format) HasUserAgent() bool { return f.set&(1<<roleUserAgent) != 0 }

// HasRequestTime reports whether the format logs how long each request
// took ($request_time, Apache %D or %T): without it Record.RequestTime is
// always 0, which says nothing.
func (f *Format) HasRequestTime() bool { return f.set&requestTimeRoles != 0 }

// Compiled reports whether f parses with the fast scanner rather than gonx.
func (f *Format) Compiled() bool { return f.fields != nil }

// Parse parses line, with or without its line ending, into r. On error, r is
// left in an unspecified state and the error wraps one of the rejection
// reasons.
func (f *Format) Parse(line []byte, r *Record) error {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if f.fields == nil {
		return f.parseGonx(line, r)
	}
	return f.scan(line, r)
}

// scan is the fast path: split line by the format's literals, then decode.
func (f *Format) scan(line []byte, r *Record) error {
	var vals values
	if err := f.split(line, &vals); err != nil {
		return err
	}
	return f.assemble(&vals, r)
}

// split finds every field of line by the literal that follows it.
func (f *Format) split(line []byte, vals *values) error {
	if len(line) > math.MaxInt32 || !bytes.HasPrefix(line, f.prefix) {
		return ErrFormat
	}
	vals.line, vals.set = line, f.set
	vals.plain = f.escape == escapeNone || bytes.IndexByte(line, '\\') < 0
	pos := len(f.prefix)
	for i := range f.fields {
		fd := &f.fields[i]
		end := len(line)
		if len(fd.until) > 0 {
			if end = f.find(line, pos, fd.until); end < 0 {
				return ErrFormat
			}
		}
		vals.span[fd.role] = [2]int32{int32(pos), int32(end)}
		pos = end + len(fd.until)
	}
	if pos != len(line) {
		return ErrFormat // the format is anchored at both ends
	}
	return nil
}

// find returns the index of the first occurrence of lit in line at or after
// from that is not escaped, or -1. A character is escaped when an odd number
// of backslashes precede it: nginx (escape=json) and Apache write a quote in
// a quoted field as \", and a backslash as \\ (nginx's default escaping
// writes both as \xHH, so it never has a raw backslash before a quote).
func (f *Format) find(line []byte, from int, lit []byte) int {
	c := lit[0]
	for i := from; i < len(line); {
		j := bytes.IndexByte(line[i:], c)
		if j < 0 {
			return -1
		}
		j += i
		i = j + 1
		if len(lit) > 1 && !restMatches(line[j:], lit) {
			continue
		}
		if j > from && line[j-1] == '\\' && f.escape != escapeNone && escaped(line[from:j]) {
			continue
		}
		return j
	}
	return -1
}

// restMatches reports whether b starts with lit, given that b[0] == lit[0].
// Literals are a few bytes long, too short for bytes.HasPrefix to pay off.
func restMatches(b, lit []byte) bool {
	if len(b) < len(lit) {
		return false
	}
	for i := 1; i < len(lit); i++ {
		if b[i] != lit[i] {
			return false
		}
	}
	return true
}

// escaped reports whether the byte after b is escaped: b ends in an odd
// number of backslashes.
func escaped(b []byte) bool {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// parseGonx is the slow path: gonx splits the line, and the fields are
// checked to rebuild the whole line, because gonx's regexp is anchored only
// at the start and would accept trailing junk.
func (f *Format) parseGonx(line []byte, r *Record) error {
	e, err := f.gonx.ParseString(string(line))
	if err != nil {
		return ErrFormat
	}
	fields := e.Fields()
	var vals values
	vals.line, vals.set = line, f.set
	vals.plain = f.escape == escapeNone || bytes.IndexByte(line, '\\') < 0
	pos := 0
	for _, t := range f.toks {
		s := t.lit
		if t.name != "" {
			s = fields[t.name]
		}
		if !bytes.HasPrefix(line[pos:], []byte(s)) {
			return ErrFormat
		}
		if t.name != "" {
			vals.span[f.role(t.name)] = [2]int32{int32(pos), int32(pos + len(s))}
		}
		pos += len(s)
	}
	if pos != len(line) {
		return ErrFormat
	}
	return f.assemble(&vals, r)
}
