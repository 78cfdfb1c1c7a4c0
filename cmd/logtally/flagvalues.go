package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Typed flag values: each says, when a value does not parse, what a value
// must look like, and parseArgs and applyEnv print that under the flag's
// name. The packages' own types (a span, a site mapping, a counter) carry
// their messages already; the flag package's own (durations, numbers,
// switches), which only say "parse error", get theirs from explainValues.

// What a value of the flag package's own types must look like.
var (
	errWantDuration = errors.New("want a duration such as 90s, 10m or 1h30m")
	errWantWhole    = errors.New("want a whole number")
	errWantBool     = errors.New("want true or false")
)

// typeNamer is a flag value that names its type for the help (--window
// duration), as the flag package does for its own.
type typeNamer interface{ typeName() string }

// explainedValue is a value of the flag package, with the error that says
// what it must look like.
type explainedValue struct {
	flag.Value
	typ  string // as the help names it: duration, int, uint
	want error
}

func (v *explainedValue) Set(s string) error {
	if v.Value.Set(s) != nil {
		return v.want
	}
	return nil
}

func (v *explainedValue) typeName() string { return v.typ }

// explainedBool is a switch of the flag package, with its error.
type explainedBool struct{ explainedValue }

func (*explainedBool) IsBoolFlag() bool { return true }

// stdValues maps the types of the flag package's values to what a value of
// each must look like, and what the help calls it. The types are taken
// from values the flag package makes, not from their names.
var stdValues = func() map[reflect.Type]explainedValue {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.Duration("duration", 0, "")
	fs.Int("int", 0, "")
	fs.Int64("int64", 0, "")
	fs.Uint("uint", 0, "")
	fs.Uint64("uint64", 0, "")
	fs.Bool("bool", false, "")
	kinds := map[string]explainedValue{
		"duration": {typ: "duration", want: errWantDuration},
		"int":      {typ: "int", want: errWantWhole}, "int64": {typ: "int", want: errWantWhole},
		"uint": {typ: "uint", want: errWantWhole}, "uint64": {typ: "uint", want: errWantWhole},
		"bool": {want: errWantBool},
	}
	types := make(map[reflect.Type]explainedValue)
	for name, kind := range kinds {
		types[reflect.TypeOf(fs.Lookup(name).Value)] = kind
	}
	return types
}()

// explainValues gives each flag of fs that is of one of the flag package's
// own types the error that says what its value must look like.
func explainValues(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, ok := stdValues[reflect.TypeOf(f.Value)]
		if !ok {
			return
		}
		kind.Value = f.Value
		if isBoolFlag(f) {
			f.Value = &explainedBool{kind}
		} else {
			f.Value = &kind
		}
	})
}

// stringRef is the string a flag value sets, which String shows (the flag
// package takes it, at registration, as the default); a zero one is empty.
type stringRef struct{ p *string }

func (s stringRef) String() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// addressValue is a host:port to listen on, or empty for none.
type addressValue struct{ stringRef }

func (a addressValue) Set(s string) error {
	if s != "" {
		if err := checkAddress(s); err != nil {
			return err
		}
	}
	*a.p = s
	return nil
}

// checkAddress says what is wrong with s as an address to listen on.
func checkAddress(s string) error {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return fmt.Errorf("a port alone: write 127.0.0.1:%s to listen on this machine only, or :%s on every interface", s, s)
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		var addrErr *net.AddrError
		if errors.As(err, &addrErr) {
			err = errors.New(addrErr.Err)
		}
		return fmt.Errorf("want host:port, such as 127.0.0.1:8080 or :8080 (%v)", err)
	}
	if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) { // a name (http) is the system's to resolve
		return fmt.Errorf("port %q: want a number from 1 to 65535 (0: any free port)", port)
	}
	return nil
}

func (addressValue) typeName() string { return "address" }

// setValue is a flag value that records whether it was set, from the
// command line or the environment: what a default cannot tell.
type setValue struct {
	addressValue
	set *bool
}

func (v setValue) Set(s string) error {
	if err := v.addressValue.Set(s); err != nil {
		return err
	}
	*v.set = true
	return nil
}

// choiceValue is one of a few words.
type choiceValue struct {
	stringRef
	choices []string
}

func (c choiceValue) Set(s string) error {
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("want %s", orList(c.choices))
	}
	*c.p = s
	return nil
}

func (choiceValue) typeName() string { return "string" }

// levelValue is a level of log/slog, by name: debug, info, warn or error
// (with an offset, as slog reads them: info+2).
type levelValue struct{ stringRef }

func (l levelValue) Set(s string) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	*l.p = s
	return nil
}

func (levelValue) typeName() string { return "string" }

// orList writes words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
