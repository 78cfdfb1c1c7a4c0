package main

import (
	"errors"
	"flag"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseArgs: flags are taken wherever they are among the other
// arguments, as GNU tools take them, and -- ends them.
func TestParseArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     string
		rest     []string
		site     string
		window   time.Duration
		verbose  bool
		wantErr  string
		wantHelp bool
	}{
		{args: "a.log --site x=y", rest: []string{"a.log"}, site: "x=y"},
		{args: "--site x=y a.log", rest: []string{"a.log"}, site: "x=y"},
		{args: "a.log --site=x=y b.log -window 5s", rest: []string{"a.log", "b.log"}, site: "x=y", window: 5 * time.Second},
		{args: "a.log --verbose b.log", rest: []string{"a.log", "b.log"}, verbose: true},
		{args: "a.log --verbose=false", rest: []string{"a.log"}},
		{args: "a.log -- --site x=y", rest: []string{"a.log", "--site", "x=y"}},
		{args: "-- -- a.log", rest: []string{"--", "a.log"}},
		{args: "- a.log", rest: []string{"-", "a.log"}},
		{args: "--site -x.log", site: "-x.log"}, // a flag's value may start with a dash
		{args: "a.log --bogus", wantErr: "unknown flag --bogus"},
		{args: "a.log --site", wantErr: "--site needs a value: --site NAME=PATH"},
		{args: "a.log --window ten", wantErr: `--window "ten": want a duration such as 90s, 10m or 1h30m`},
		{args: "--verbose=maybe", wantErr: `--verbose "maybe": want true or false`},
		{args: "---x", wantErr: `bad flag syntax "---x"`},
		{args: "-=x", wantErr: `bad flag syntax "-=x"`},
		{args: "a.log -h", wantHelp: true},
		{args: "a.log --help b.log", wantHelp: true},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			site := fs.String("site", "", "`NAME=PATH`")
			window := fs.Duration("window", 0, "")
			verbose := fs.Bool("verbose", false, "")
			explainValues(fs)
			rest, err := parseArgs(fs, strings.Fields(tt.args))
			switch {
			case tt.wantHelp:
				if !errors.Is(err, flag.ErrHelp) {
					t.Errorf("err = %v, want flag.ErrHelp", err)
				}
				return
			case tt.wantErr != "":
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !slices.Equal(rest, tt.rest) || *site != tt.site || *window != tt.window || *verbose != tt.verbose {
				t.Errorf("rest %q, --site %q, --window %s, --verbose %t; want %q, %q, %s, %t",
					rest, *site, *window, *verbose, tt.rest, tt.site, tt.window, tt.verbose)
			}
		})
	}
}

// TestFlagsAfterFiles: `logtally run access.log --site x=y` maps the site;
// before, the flag parser stopped at the first file and took --site and
// x=y for two more files to follow.
func TestFlagsAfterFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, blog := filepath.Join(dir, "access.log"), filepath.Join(dir, "blog.log")
	m := NewMain()
	m.Stderr = io.Discard
	m.Getenv = func(string) (string, bool) { return "", false }
	if err := m.ParseFlags([]string{"run", log, "--site", "blog=" + blog, "--admin-listen", "127.0.0.1:7777", "--", "-odd.log"}); err != nil {
		t.Fatal(err)
	}
	r := m.run()
	if want := []string{log, "-odd.log"}; !slices.Equal(r.Files, want) {
		t.Errorf("files = %q, want %q", r.Files, want)
	}
	if want := []string{log, "-odd.log", blog}; !slices.Equal(r.patterns, want) {
		t.Errorf("followed = %q, want %q (the files, then the site's)", r.patterns, want)
	}
	if want := []siteFile{{Site: "blog", Path: blog}}; !slices.Equal(r.Pipeline.siteFiles(), want) {
		t.Errorf("sites = %v, want %v", r.Pipeline.siteFiles(), want)
	}
	if r.serve.AdminListen != "127.0.0.1:7777" {
		t.Errorf("--admin-listen after the files: admin listen = %q", r.serve.AdminListen)
	}
}

// TestEveryValueSaysWhatItWants: no flag of any command is left with a
// number, a duration or a switch of the flag package, whose errors ("parse
// error") do not say what to write: explainValues gives each its message.
// A flag of a type it does not know yet (a float) fails here.
func TestEveryValueSaysWhatItWants(t *testing.T) {
	t.Parallel()
	silent := []string{"durationValue", "intValue", "int64Value", "uintValue", "uint64Value", "boolValue", "float64Value"}
	for _, c := range commands {
		c.flags().VisitAll(func(f *flag.Flag) {
			typ := reflect.TypeOf(f.Value)
			if typ.Kind() == reflect.Pointer && typ.Elem().PkgPath() == "flag" && slices.Contains(silent, typ.Elem().Name()) {
				t.Errorf("logtally %s --%s is a %s: it does not say what a value must look like", c.name, f.Name, typ)
			}
		})
	}
}

// TestEnvironmentValuesSayWhatTheyWant: a bad value in the environment
// names the variable, the flag and what to write.
func TestEnvironmentValuesSayWhatTheyWant(t *testing.T) {
	t.Parallel()
	tests := []struct{ command, env, value, want string }{
		{"run", "LOGTALLY_WINDOW", "ten", `$LOGTALLY_WINDOW="ten" (--window): want a duration such as 90s, 10m or 1h30m`},
		{"run", "LOGTALLY_INCLUDE_BOTS", "maybe", `$LOGTALLY_INCLUDE_BOTS="maybe" (--include-bots): want true or false`},
		{"run", "LOGTALLY_LOG_LEVEL", "loud", `$LOGTALLY_LOG_LEVEL="loud" (--log-level): want debug, info, warn or error`},
		{"run", "LOGTALLY_LOG_FORMAT", "xml", `$LOGTALLY_LOG_FORMAT="xml" (--log-format): want text or json`},
		{"run", "LOGTALLY_ADMIN_LISTEN", "8080", `$LOGTALLY_ADMIN_LISTEN="8080" (--admin-listen): a port alone: write 127.0.0.1:8080 to listen on this machine only, or :8080 on every interface`},
		{"replay", "LOGTALLY_MAX_SKEW", "soon", `$LOGTALLY_MAX_SKEW="soon" (--max-skew): want a duration such as 90s, 10m or 1h30m`},
		{"report", "LOGTALLY_PAGES", "x", `$LOGTALLY_PAGES="x" (--pages): want a whole number`},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			m := NewMain()
			m.Stderr = io.Discard
			m.Getenv = func(k string) (string, bool) { return tt.value, k == tt.env }
			err := m.ParseFlags([]string{tt.command, "x.log"})
			var ue *UsageError
			if !errors.As(err, &ue) || err.Error() != tt.want {
				t.Errorf("err = %v (%T), want a UsageError %q", err, err, tt.want)
			}
		})
	}
}
