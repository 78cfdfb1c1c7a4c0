package parser

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestApacheFormat(t *testing.T) {
	tests := []struct {
		name, apache, want string
	}{
		{"common as in httpd.conf", `%h %l %u %t \"%r\" %>s %b`,
			`$remote_addr $remote_logname $remote_user [$time_local] "$request" $status $body_bytes_sent`},
		{"vhost_combined", VhostCombined,
			`$server_name:$server_port $remote_addr $remote_logname $remote_user [$time_local] "$request" $status $bytes_sent "$http_referer" "$http_user_agent"`},
		{"modifiers and headers", `%a %t "%r" %<s %!200,304{Referer}i "%{X-Forwarded-For}i" %D %{ms}T %T %V %%`,
			`$remote_addr [$time_local] "$request" $status $http_referer "$http_x_forwarded_for" $request_time_us $request_time_ms $request_time_s $host %`},
		{"epoch seconds", `%{sec}t %h "%r"`, `$msec $remote_addr "$request"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.apache)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNewRejectsBadApacheFormat(t *testing.T) {
	for _, spec := range []string{
		`%h %t "%r" %Z`,                   // unknown directive
		`%h %{%d/%b/%Y}t "%r"`,            // strftime time
		`%h %t "%r" %`,                    // trailing %
		`%h %t "%r" %{Referer`,            // unterminated
		`%h "%r" %>s`,                     // no time
		`%h %{X-Forwarded-For}i %t "%r"%`, // trailing % again
	} {
		if _, err := New(spec); !errors.Is(err, ErrBadSpec) {
			t.Errorf("New(%q) = %v, want ErrBadSpec", spec, err)
		}
	}
}

func TestNginxTokens(t *testing.T) {
	tests := []struct{ spec, want string }{
		{`${remote_addr}x [$time_local] "$request" $$ $`, `${remote_addr}x [$time_local] "$request" $$ $`},
		{`${remote_addr} [$time_local] "$request"`, `$remote_addr [$time_local] "$request"`},
	}
	for _, tt := range tests {
		toks, err := nginxTokens(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(toks); got != tt.want {
			t.Errorf("render(nginxTokens(%q)) = %q, want %q", tt.spec, got, tt.want)
		}
	}
	for _, spec := range []string{`${remote_addr`, `${} x`, `${a b}`} {
		if _, err := nginxTokens(spec); !errors.Is(err, ErrBadSpec) {
			t.Errorf("nginxTokens(%q) = %v, want ErrBadSpec", spec, err)
		}
	}
}

func TestNginxLogFormat(t *testing.T) {
	conf, err := os.ReadFile("testdata/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, format, escape string }{
		{"main", Main, escapeDefault},
		{"timing", Combined + ` $request_time $upstream_response_time`, escapeDefault},
		{"json", `{"time":"$time_iso8601","remote_addr":"$remote_addr","request":"$request","status":$status,` +
			`"body_bytes_sent":$body_bytes_sent,"request_time":$request_time,"http_referer":"$http_referer",` +
			`"http_user_agent":"$http_user_agent"}`, escapeJSON},
	}
	for _, tt := range tests {
		format, escape, err := nginxLogFormat(conf, tt.name)
		if err != nil || format != tt.format || escape != tt.escape {
			t.Errorf("nginxLogFormat(%s) = %q, %q, %v\nwant %q, %q", tt.name, format, escape, err, tt.format, tt.escape)
		}
	}
	for _, bad := range []struct{ conf, name string }{
		{string(conf), "missing"},
		{`log_format x '$remote_addr'`, "x"},                    // no ';'
		{`log_format x escape=xml '$remote_addr';`, "x"},        // unknown escape
		{`log_format x;`, "x"},                                  // empty
		{`log_format x '$remote_addr [$time_local] "$req`, "x"}, // unterminated string
		{`http { log_format x '$remote_addr' }`, "x"},
	} {
		if _, _, err := nginxLogFormat([]byte(bad.conf), bad.name); !errors.Is(err, ErrBadSpec) {
			t.Errorf("nginxLogFormat(%q, %s) = %v, want ErrBadSpec", bad.conf, bad.name, err)
		}
	}
}

// TestNginxLogFormatNamesTheDefinedOnes: asked for a name the file does not
// define, the error lists the names it does (comments are not definitions).
func TestNginxLogFormatNamesTheDefinedOnes(t *testing.T) {
	conf, err := os.ReadFile("testdata/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = nginxLogFormat(conf, "missing")
	if want := `the file defines main, timing, json (choose one with --log-format-name)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to say %q", err, want)
	}
	_, _, err = nginxLogFormat([]byte("http { access_log off; }"), "main")
	if want := "the file defines no log_format"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to say %q", err, want)
	}
}

func TestConfigFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string // the compiled format; "" for an error
		wantErr error
	}{
		{"default", nil, Combined, nil},
		{"preset", []string{"--format", "main"}, Main, nil},
		{"nginx string", []string{"--format", `$remote_addr [$time_local] "$request"`}, `$remote_addr [$time_local] "$request"`, nil},
		{"apache string", []string{"--format", `%h %t "%r"`}, `$remote_addr [$time_local] "$request"`, nil},
		{"nginx conf", []string{"--nginx-conf", "testdata/nginx.conf"}, Main, nil},
		{"nginx conf by name", []string{"--nginx-conf", "testdata/nginx.conf", "--log-format-name", "timing"},
			Combined + ` $request_time $upstream_response_time`, nil},
		{"nginx conf combined", []string{"--nginx-conf", "testdata/nginx.conf", "--log-format-name", "combined"}, Combined, nil},
		{"xff", []string{"--format", "main", "--real-ip-from-xff"}, Main, nil},
		{"xff not logged", []string{"--real-ip-from-xff"}, "", ErrBadSpec},
		{"unknown name", []string{"--nginx-conf", "testdata/nginx.conf", "--log-format-name", "nope"}, "", ErrBadSpec},
		{"no conf", []string{"--nginx-conf", "testdata/missing.conf"}, "", os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c.RegisterFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			f, err := c.Compile()
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Compile = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestFallbackToGonx: two fields with nothing between them cannot be split
// by the scanner; such a format still parses, with gonx, and says so once.
func TestFallbackToGonx(t *testing.T) {
	var logs bytes.Buffer
	cfg := Config{
		Format: `$remote_addr [$time_local] "$request" $status $connection$connection_requests "$http_user_agent"`,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	f, err := cfg.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if f.Compiled() {
		t.Fatal("format with adjacent fields compiled")
	}
	if n := strings.Count(logs.String(), "gonx"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
	var r Record
	// gonx gives the whole "12" to $connection and "" to $connection_requests.
	line := `1.2.3.4 [01/Jan/2026:00:00:00 +0000] "GET /x HTTP/1.1" 200 12 "ua"`
	if err := f.Parse([]byte(line), &r); err != nil {
		t.Fatalf("Parse(%q): %v", line, err)
	}
	want := Record{Host: b("1.2.3.4"), Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Method: b("GET"),
		Path: b("/x"), Protocol: b("HTTP/1.1"), Status: 200, UserAgent: b("ua")}
	if !equal(r, want) {
		t.Errorf("got  %s\nwant %s", dump(r), dump(want))
	}
	for _, bad := range []string{line + ` extra`, line[:len(line)-1]} {
		if err := f.Parse([]byte(bad), &r); !errors.Is(err, ErrFormat) {
			t.Errorf("Parse(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

// TestNewGonxHangs: gonx.NewParser loops forever on adjacent variables at the
// end of a format; New must return instead.
func TestNewGonxHangs(t *testing.T) {
	_, err := New(`$remote_addr [$time_local] "$request" $status $pipe$connection_requests`)
	if !errors.Is(err, ErrBadSpec) {
		t.Errorf("New = %v, want ErrBadSpec", err)
	}
}

// TestEscapeNone: with escape=none nginx writes values as they are, so a
// backslash is just a byte (which a path holds as \x5C).
func TestEscapeNone(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nginx.conf")
	err := os.WriteFile(conf, []byte(`log_format raw escape=none '$remote_addr [$time_local] "$request" "$http_user_agent"';`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Config{NginxConf: conf, LogFormatName: "raw"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	line := `1.2.3.4 [01/Jan/2026:00:00:00 +0000] "GET /a\x22 HTTP/1.1" "ua\"`
	if err := f.Parse([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.Path) != `/a\x5Cx22` || string(r.UserAgent) != `ua\` {
		t.Errorf("got %s", dump(r))
	}
}
