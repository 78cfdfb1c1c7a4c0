package parser

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPathEscaped: a path holds its raw bytes, its control bytes and its
// backslashes as \xHH, whatever the log's escaping: what nginx writes, so
// that it reads as in the log, and valid UTF-8 for the stores and the API.
func TestPathEscaped(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nginx.conf")
	err := os.WriteFile(conf, []byte(`log_format raw escape=none '$remote_addr [$time_local] "$request"';
log_format json escape=json '{"addr":"$remote_addr","time":"$time_local","request":"$request"}';`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string]*Format{"combined": mustFormat(t, "combined"), "gonx": gonxOnly(mustFormat(t, "combined"))}
	for _, name := range []string{"raw", "json"} {
		if formats[name], err = (Config{NginxConf: conf, LogFormatName: name}).Compile(); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		format, line, want string
	}{
		{"combined", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET /caf\xE9 HTTP/1.1" 200 1 "-" "ua"`, `/caf\xE9`},
		{"combined", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET /caf\xC3\xA9 HTTP/1.1" 200 1 "-" "ua"`, "/café"},
		{"combined", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET /a\x00b HTTP/1.1" 200 1 "-" "ua"`, `/a\x00b`},
		{"combined", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET /a\x5Cb\x22 HTTP/1.1" 200 1 "-" "ua"`, `/a\x5Cb"`},
		{"combined", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET /a\x7F?q=\xE9 HTTP/1.1" 200 1 "-" "ua"`, `/a\x7F`},
		{"combined", "1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] \"GET /caf\xe9 HTTP/1.1\" 200 1 \"-\" \"ua\"", `/caf\xE9`},
		{"gonx", `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET /caf\xE9\x00 HTTP/1.1" 200 1 "-" "ua"`, `/caf\xE9\x00`},
		{"raw", "1.2.3.4 [01/Jan/2026:00:00:00 +0000] \"GET /caf\xe9\x01\\xE9 HTTP/1.1\"", `/caf\xE9\x01\x5CxE9`},
		{"raw", "1.2.3.4 [01/Jan/2026:00:00:00 +0000] \"GET /café HTTP/1.1\"", "/café"},
		{"json", `{"addr":"1.2.3.4","time":"01/Jan/2026:00:00:00 +0000","request":"GET /a\u0000\u001f HTTP/1.1"}`, `/a\x00\x1F`},
		{"json", "{\"addr\":\"1.2.3.4\",\"time\":\"01/Jan/2026:00:00:00 +0000\",\"request\":\"GET /caf\xe9\\\\ HTTP/1.1\"}", `/caf\xE9\x5C`},
	}
	for _, tt := range tests {
		var r Record
		if err := formats[tt.format].Parse([]byte(tt.line), &r); err != nil {
			t.Errorf("%s: Parse(%q): %v", tt.format, tt.line, err)
			continue
		}
		if string(r.Path) != tt.want {
			t.Errorf("%s: Parse(%q) path %q, want %q", tt.format, tt.line, r.Path, tt.want)
		}
	}
}
