package parser

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nginxTree writes files (name to content; "ETC" in a content stands for
// the directory written to) into a temporary directory, as /etc/nginx is
// laid out, and returns that directory.
func nginxTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "ETC", dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// debianNginx returns the files of Debian 12's nginx configuration as the
// package installs it (testdata/nginx-debian, its paths under /etc/nginx
// written as ETC), plus more.
func debianNginx(t *testing.T, more map[string]string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{"nginx.conf", "mime.types", "sites-enabled/default"} {
		data, err := os.ReadFile(filepath.Join("testdata", "nginx-debian", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = strings.ReplaceAll(string(data), "/etc/nginx", "ETC")
	}
	for name, text := range more {
		files[name] = text
	}
	return files
}

// TestNginxConfFollowsIncludes: the format is read from the configuration
// as nginx reads it, includes in place, and is by default the one the
// access_log lines use: on Debian's own configuration, which defines no
// log_format and logs in combined, --nginx-conf alone works.
func TestNginxConfFollowsIncludes(t *testing.T) {
	const vhosts = `log_format vhosts '$host $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent';`
	tests := []struct {
		name  string
		files map[string]string
		asked string // --log-format-name
		want  string // the format, or the error
	}{
		{"debian as installed", debianNginx(t, nil), "", Combined},
		{"a format and its access_log in conf.d", debianNginx(t, map[string]string{
			"conf.d/logtally.conf": vhosts + "\naccess_log /var/log/nginx/vhosts.log vhosts buffer=32k;",
			"nginx.conf":           strings.Replace(debianNginx(t, nil)["nginx.conf"], "access_log /var/log/nginx/access.log;", "", 1),
		}), "", `$host $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`},
		{"a format in conf.d, asked for", debianNginx(t, map[string]string{"conf.d/formats.conf": vhosts}), "vhosts",
			`$host $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`},
		{"two formats logged", debianNginx(t, map[string]string{
			"sites-enabled/shop": "server { " + vhosts + " access_log /var/log/nginx/shop.log vhosts; }",
		}), "", "the access_log lines use several log formats (combined, vhosts): choose the one of the log logtally reads with --log-format-name"},
		{"relative include", map[string]string{
			"nginx.conf":        "http { include formats/*.conf; access_log off; access_log /var/log/a.log vhosts if=$log; }",
			"formats/main.conf": vhosts,
		}, "", `$host $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`},
		{"an include that loops", map[string]string{"nginx.conf": "include nginx.conf;"}, "", "nested more than 16 deep"},
		{"a missing include", map[string]string{"nginx.conf": "include gone.conf;"}, "", "gone.conf: no such file or directory"},
		{"no access_log, formats defined", map[string]string{"nginx.conf": vhosts}, "",
			`log_format "main" not found: bad log format: the file defines vhosts (choose one with --log-format-name)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := nginxTree(t, tt.files)
			f, err := Config{NginxConf: filepath.Join(dir, "nginx.conf"), LogFormatName: tt.asked}.Compile()
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = f.String()
			}
			if strings.HasPrefix(tt.want, "$") && got != tt.want || !strings.HasPrefix(tt.want, "$") && !strings.Contains(got, tt.want) {
				t.Errorf("got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestAccessLogFormats: the format of each access_log line, as nginx
// reads its arguments.
func TestAccessLogFormats(t *testing.T) {
	words, err := confWords([]byte(`
		access_log off;
		access_log /var/log/a.log;
		access_log syslog:server=unix:/dev/log main buffer=32k flush=5s;
		access_log /var/log/b.log combined if=$loggable;
		location / { access_log /var/log/c.log main; }
		# access_log /var/log/d.log json;
		log_format x 'access_log $remote_addr';`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(accessLogFormats(words), " ")
	if want := "combined main"; got != want {
		t.Errorf("accessLogFormats = %q, want %q", got, want)
	}
	if _, err := chooseLogFormat(words); !errors.Is(err, errSeveralFormats) {
		t.Errorf("chooseLogFormat = %v, want errSeveralFormats", err)
	}
}
