package parser

import (
	"bytes"
	"fmt"
	"strings"
)

// token is one piece of a format: literal text, or a variable (name set).
type token struct {
	lit  string
	name string
}

// isNameByte reports whether c may appear in an nginx variable name.
func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// tokens is a format being split into tokens.
type tokens []token

// lit appends the literal text s, merged into the literal before it if
// there is one.
func (ts *tokens) lit(s string) {
	if n := len(*ts); n > 0 && (*ts)[n-1].name == "" {
		(*ts)[n-1].lit += s
	} else if s != "" {
		*ts = append(*ts, token{lit: s})
	}
}

// nginxTokens splits an nginx log_format string into literals and variables
// ($name or ${name}). Adjacent literals are merged.
func nginxTokens(spec string) ([]token, error) {
	var toks tokens
	for i := 0; i < len(spec); {
		j := strings.IndexByte(spec[i:], '$')
		if j < 0 {
			toks.lit(spec[i:])
			break
		}
		toks.lit(spec[i : i+j])
		i += j + 1
		if i < len(spec) && spec[i] == '{' {
			end := strings.IndexByte(spec[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("format %q: unterminated ${: %w", spec, ErrBadSpec)
			}
			name := spec[i+1 : i+end]
			if name == "" || strings.IndexFunc(name, func(r rune) bool { return r > 0x7f || !isNameByte(byte(r)) }) >= 0 {
				return nil, fmt.Errorf("format %q: bad variable name %q: %w", spec, name, ErrBadSpec)
			}
			toks = append(toks, token{name: name})
			i += end + 1
			continue
		}
		k := i
		for k < len(spec) && isNameByte(spec[k]) {
			k++
		}
		if k == i { // a lone '$' is literal text
			toks.lit("$")
			continue
		}
		toks = append(toks, token{name: spec[i:k]})
		i = k
	}
	return toks, nil
}

// render writes tokens back as an nginx log_format string.
func render(toks []token) string {
	var sb strings.Builder
	for i, t := range toks {
		if t.name == "" {
			sb.WriteString(t.lit)
			continue
		}
		// ${name} when a name byte follows, so the name does not run on.
		if i+1 < len(toks) && toks[i+1].name == "" && isNameByte(toks[i+1].lit[0]) {
			sb.WriteString("${" + t.name + "}")
		} else {
			sb.WriteString("$" + t.name)
		}
	}
	return sb.String()
}

// isApache reports whether spec is an Apache LogFormat string rather than an
// nginx one: Apache directives start with '%', nginx variables with '$'.
func isApache(spec string) bool {
	return strings.IndexByte(spec, '%') >= 0 && strings.IndexByte(spec, '$') < 0
}

// apacheVars maps Apache LogFormat directives (by letter) to the nginx
// variables that hold the same value. Names without an nginx equivalent are
// kept readable and are parsed as fields whose value is not used.
var apacheVars = map[byte][]token{
	'a': {{name: "remote_addr"}},
	'A': {{name: "server_addr"}},
	'B': {{name: "body_bytes_sent"}},
	'b': {{name: "body_bytes_sent"}},
	'D': {{name: "request_time_us"}},
	'f': {{name: "request_filename"}},
	'h': {{name: "remote_addr"}},
	'H': {{name: "server_protocol"}},
	'I': {{name: "request_length"}},
	'k': {{name: "connection_requests"}},
	'l': {{name: "remote_logname"}},
	'L': {{name: "request_log_id"}},
	'm': {{name: "request_method"}},
	'O': {{name: "bytes_sent"}},
	'p': {{name: "server_port"}},
	'P': {{name: "pid"}},
	'q': {{name: "query_string"}},
	'r': {{name: "request"}},
	'R': {{name: "handler"}},
	's': {{name: "status"}},
	'S': {{name: "bytes_transferred"}},
	't': {{lit: "["}, {name: "time_local"}, {lit: "]"}}, // %t includes the brackets
	'T': {{name: "request_time_s"}},
	'u': {{name: "remote_user"}},
	'U': {{name: "uri"}},
	'v': {{name: "server_name"}},
	'V': {{name: "host"}},
	'X': {{name: "connection_status"}},
}

// apacheTokens translates an Apache LogFormat string into the tokens of the
// equivalent nginx format.
func apacheTokens(spec string) ([]token, error) {
	a := apacheSpec{spec: spec}
	for i := 0; i < len(spec); i++ {
		switch c := spec[i]; {
		case c == '\\' && i+1 < len(spec):
			i++
			a.escaped(spec[i : i+1])
		case c != '%':
			a.toks.lit(spec[i : i+1])
		default:
			var err error
			if i, err = a.directive(i + 1); err != nil {
				return nil, err
			}
		}
	}
	return a.toks, nil
}

// apacheSpec is an Apache LogFormat string being translated into tokens.
type apacheSpec struct {
	spec string
	toks tokens
}

func (a *apacheSpec) bad(what string) error {
	return fmt.Errorf("LogFormat %q: %s: %w", a.spec, what, ErrBadSpec)
}

// escaped appends c, which followed a backslash, as httpd.conf reads the
// string: \" is a quote, \t a tab, \n a newline.
func (a *apacheSpec) escaped(c string) {
	switch c {
	case "t":
		a.toks.lit("\t")
	case "n":
		a.toks.lit("\n")
	default:
		a.toks.lit(c)
	}
}

// directive translates the directive that follows a % at spec[i], and
// returns the index of its last byte. Modifiers (%>s, %<s,
// %!200,304{...}i) are accepted and ignored: they choose which value is
// logged, not its shape.
func (a *apacheSpec) directive(i int) (int, error) {
	spec := a.spec
	for i < len(spec) && (spec[i] == '<' || spec[i] == '>' || spec[i] == '!' || spec[i] == ',' || '0' <= spec[i] && spec[i] <= '9') {
		i++
	}
	if i == len(spec) {
		return i, a.bad("trailing %")
	}
	if spec[i] == '%' {
		a.toks.lit("%")
		return i, nil
	}
	var arg string
	if spec[i] == '{' {
		end := strings.IndexByte(spec[i:], '}')
		if end < 0 || i+end+1 >= len(spec) {
			return i, a.bad("unterminated %{")
		}
		arg, i = spec[i+1:i+end], i+end+1
	}
	if arg == "" {
		return i, a.plain(spec[i])
	}
	return i, a.braced(arg, spec[i])
}

// plain appends the variables of the directive %d.
func (a *apacheSpec) plain(d byte) error {
	v, ok := apacheVars[d]
	if !ok {
		return a.bad(fmt.Sprintf("unknown directive %%%c", d))
	}
	for _, t := range v {
		if t.name == "" {
			a.toks.lit(t.lit)
		} else {
			a.toks = append(a.toks, t)
		}
	}
	return nil
}

// braced appends the variable of the directive %{arg}d: a header, a cookie,
// an environment variable, a note, or a unit of time.
func (a *apacheSpec) braced(arg string, d byte) error {
	name := strings.ToLower(strings.Map(func(r rune) rune {
		if r < 0x80 && isNameByte(byte(r)) {
			return r
		}
		return '_'
	}, arg))
	switch d {
	case 'i':
		a.toks = append(a.toks, token{name: "http_" + name})
	case 'o':
		a.toks = append(a.toks, token{name: "sent_http_" + name})
	case 'C':
		a.toks = append(a.toks, token{name: "cookie_" + name})
	case 'e':
		a.toks = append(a.toks, token{name: "env_" + name})
	case 'n':
		a.toks = append(a.toks, token{name: "note_" + name})
	case 'T':
		a.toks = append(a.toks, token{name: "request_time_" + name}) // %{ms}T, %{us}T, %{s}T
	case 'a', 'h', 'p', 'c':
		a.toks = append(a.toks, apacheVars[d]...)
	case 't':
		if arg != "sec" {
			return a.bad(fmt.Sprintf("time format %%{%s}t is not supported; use %%t or %%{sec}t", arg))
		}
		a.toks = append(a.toks, token{name: "msec"})
	default:
		return a.bad(fmt.Sprintf("unknown directive %%{%s}%c", arg, d))
	}
	return nil
}

// Escaping styles of nginx log_format (its escape= parameter). Apache escapes
// like nginx's json style as far as parsing goes: a backslash always starts an
// escape.
const (
	escapeDefault = "default"
	escapeJSON    = "json"
	escapeNone    = "none"
)

// nginxLogFormat finds "log_format NAME [escape=...] STRING...;" in the text
// of an nginx configuration and returns the format (its strings joined, as
// nginx does) and its escaping style.
func nginxLogFormat(conf []byte, name string) (format, escape string, err error) {
	words, err := confWords(conf)
	if err != nil {
		return "", "", err
	}
	return logFormatIn(words, name)
}

// logFormatIn is nginxLogFormat on the words of a configuration.
func logFormatIn(words []string, name string) (format, escape string, err error) {
	for i := 0; i < len(words); i++ {
		if words[i] != "log_format" || i+1 >= len(words) || words[i+1] != name {
			continue
		}
		escape = escapeDefault
		var sb strings.Builder
		for j := i + 2; j < len(words); j++ {
			w := words[j]
			switch {
			case w == ";":
				if sb.Len() == 0 {
					return "", "", fmt.Errorf("log_format %s: empty: %w", name, ErrBadSpec)
				}
				return sb.String(), escape, nil
			case j == i+2 && strings.HasPrefix(w, "escape="):
				escape = strings.TrimPrefix(w, "escape=")
				if escape != escapeDefault && escape != escapeJSON && escape != escapeNone {
					return "", "", fmt.Errorf("log_format %s: unknown %s: %w", name, w, ErrBadSpec)
				}
			case w == "{" || w == "}":
				return "", "", fmt.Errorf("log_format %s: no ';': %w", name, ErrBadSpec)
			default:
				sb.WriteString(w)
			}
		}
		return "", "", fmt.Errorf("log_format %s: no ';': %w", name, ErrBadSpec)
	}
	var names []string
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "log_format" && (i == 0 || words[i-1] == ";" || words[i-1] == "{" || words[i-1] == "}") {
			names = append(names, words[i+1])
		}
	}
	if len(names) == 0 {
		return "", "", fmt.Errorf("log_format %q %w: the file defines no log_format (nginx's own is combined)", name, errNoLogFormat)
	}
	return "", "", fmt.Errorf("log_format %q %w: the file defines %s (choose one with --log-format-name)",
		name, errNoLogFormat, strings.Join(names, ", "))
}

// errNoLogFormat means the configuration has no log_format of that name.
var errNoLogFormat = fmt.Errorf("not found: %w", ErrBadSpec)

// confWords splits an nginx configuration into words the way nginx does:
// quoted strings (with \" \' \\ \n \t \r escapes) and bare words are words,
// and ';', '{', '}' are words of their own; '#' starts a comment.
func confWords(conf []byte) ([]string, error) {
	var words []string
	for i := 0; i < len(conf); {
		c := conf[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '#':
			if j := bytes.IndexByte(conf[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(conf)
			}
		case c == ';' || c == '{' || c == '}':
			words = append(words, string(c))
			i++
		case c == '"' || c == '\'':
			var sb strings.Builder
			j := i + 1
			for ; j < len(conf) && conf[j] != c; j++ {
				if conf[j] == '\\' && j+1 < len(conf) {
					j++
					switch conf[j] {
					case 'n':
						sb.WriteByte('\n')
					case 't':
						sb.WriteByte('\t')
					case 'r':
						sb.WriteByte('\r')
					case '"', '\'', '\\':
						sb.WriteByte(conf[j])
					default:
						sb.WriteByte('\\')
						sb.WriteByte(conf[j])
					}
					continue
				}
				sb.WriteByte(conf[j])
			}
			if j == len(conf) {
				return nil, fmt.Errorf("nginx conf: unterminated string: %w", ErrBadSpec)
			}
			words = append(words, sb.String())
			i = j + 1
		default:
			j := i
			for j < len(conf) && !bytes.ContainsRune([]byte(" \t\r\n;{}\"'#"), rune(conf[j])) {
				j++
			}
			words = append(words, string(conf[i:j]))
			i = j
		}
	}
	return words, nil
}
