package parser

import (
	"bytes"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/satyrius/gonx"
)

// Preset formats, written in nginx log_format syntax.
const (
	// Combined is the nginx and Apache "combined" format.
	Combined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`
	// Common is the Common Log Format.
	Common = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`
)

// Presets maps the names accepted by --format to their format strings.
var Presets = map[string]string{
	"combined": Combined,
	"common":   Common,
}

// timeLocal is the layout of nginx $time_local and Apache %t.
const timeLocal = "02/Jan/2006:15:04:05 -0700"

// Config selects the log format. Its zero value is not useful; RegisterFlags
// sets the defaults.
type Config struct {
	Format string // preset name or nginx log_format string
}

// RegisterFlags registers the parser's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Format, "format", "combined", "log format: combined, common, or an nginx log_format string")
}

// Compile compiles the configured format.
func (c Config) Compile() (*Format, error) { return New(c.Format) }

// Format is a compiled log format. It is safe for concurrent use.
type Format struct {
	spec string
	gonx *gonx.Parser
}

// New compiles a format given either as a preset name or as an nginx
// log_format string. The format must contain $remote_addr, $time_local and
// $request, the fields every count depends on.
func New(spec string) (f *Format, err error) {
	if p, ok := Presets[spec]; ok {
		spec = p
	}
	for _, need := range []string{"$remote_addr", "$time_local", "$request"} {
		if !strings.Contains(spec, need) {
			return nil, fmt.Errorf("format %q: missing %s: %w", spec, need, ErrBadSpec)
		}
	}
	defer func() {
		// gonx builds a regexp from the format and panics on one it cannot compile.
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("format %q: %v: %w", spec, r, ErrBadSpec)
		}
	}()
	return &Format{spec: spec, gonx: gonx.NewParser(spec)}, nil
}

// String returns the format in nginx log_format syntax.
func (f *Format) String() string { return f.spec }

// Parse parses line into r. On error, r is left in an unspecified state and
// the error wraps one of the rejection reasons.
func (f *Format) Parse(line []byte, r *Record) error {
	line = bytes.TrimRight(line, "\r\n")
	e, err := f.gonx.ParseString(string(line))
	if err != nil {
		return ErrFormat
	}
	r.Reset()
	fields := e.Fields()
	if r.Host = field(fields, "remote_addr"); len(r.Host) == 0 || r.Host[0] == '-' {
		return ErrHost
	}
	t, err := time.Parse(timeLocal, fields["time_local"])
	if err != nil {
		return fmt.Errorf("%w: %q", ErrTimestamp, fields["time_local"])
	}
	r.Time = t.UTC()
	if err := splitRequest(field(fields, "request"), r); err != nil {
		return err
	}
	if s, ok := fields["status"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 || n > 999 {
			return fmt.Errorf("%w: status %q", ErrNumber, s)
		}
		r.Status = n
	}
	if s, ok := fields["body_bytes_sent"]; ok && s != "-" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: bytes %q", ErrNumber, s)
		}
		r.Bytes = n
	}
	r.Referer = field(fields, "http_referer")
	r.UserAgent = field(fields, "http_user_agent")
	return nil
}

func field(fields gonx.Fields, name string) []byte {
	s, ok := fields[name]
	if !ok {
		return nil
	}
	return []byte(s)
}

// splitRequest splits "METHOD TARGET PROTOCOL" into r's request fields.
func splitRequest(req []byte, r *Record) error {
	method, rest, ok := bytes.Cut(req, []byte{' '})
	if !ok || len(method) == 0 {
		return ErrRequest
	}
	target, proto, ok := bytes.Cut(rest, []byte{' '})
	if !ok || len(target) == 0 || !bytes.HasPrefix(proto, []byte("HTTP/")) {
		return ErrRequest
	}
	for _, c := range method {
		if c < 'A' || c > 'Z' {
			return ErrRequest
		}
	}
	// An absolute-form target (proxy requests) counts under its path.
	for _, scheme := range [][]byte{[]byte("http://"), []byte("https://")} {
		if rest, ok := bytes.CutPrefix(target, scheme); ok {
			if i := bytes.IndexByte(rest, '/'); i >= 0 {
				target = rest[i:]
			} else {
				target = []byte{'/'}
			}
		}
	}
	r.Method, r.Protocol = method, proto
	r.Path, r.Query, _ = bytes.Cut(target, []byte{'?'})
	if len(r.Path) == 0 {
		return ErrRequest
	}
	return nil
}
