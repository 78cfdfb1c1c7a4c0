package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagErrors runs the real program with a mistake on the command line:
// it prints one line naming the flag and the fix, then where the help is,
// and exits with status 2, without the whole help.
func TestFlagErrors(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nginx.conf")
	os.WriteFile(conf, []byte(`http { log_format upstream '$remote_addr [$time_local] "$request"'; log_format json_logs escape=json '{"a":"$remote_addr"}'; }`), 0o644)
	short, empty, lines := filepath.Join(t.TempDir(), "short"), filepath.Join(t.TempDir(), "empty"), filepath.Join(t.TempDir(), "lines")
	os.WriteFile(short, []byte("hunter2\n"), 0o600)
	os.WriteFile(empty, []byte(" \n"), 0o600)
	os.WriteFile(lines, []byte("0123456789abcdef\n0123456789abcdef\n"), 0o600)
	const tokenFix = "write a random one into it, such as: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE"
	tests := []struct {
		args string
		want string
	}{
		{"run --bogus", "logtally run: unknown flag --bogus: run has no such flag\nsee 'logtally run --help'\n"},
		{"run --windw 5m", "logtally run: unknown flag --windw: did you mean --window?\nsee 'logtally run --help'\n"},
		{"replay --listen :1 x.log", "logtally replay: unknown flag --listen: it is a flag of 'logtally run', not of 'logtally replay'\nsee 'logtally replay --help'\n"},
		{"replay --window-end log x.log", "logtally replay: unknown flag --window-end: it is a flag of 'logtally run', not of 'logtally replay'\nsee 'logtally replay --help'\n"},
		{"run --window ten", "logtally run: --window \"ten\": want a duration such as 90s, 10m or 1h30m\nsee 'logtally run --help'\n"},
		{"run --db", "logtally run: --db needs a value: --db FILE\nsee 'logtally run --help'\n"},
		{"run --include-bots=maybe", "logtally run: --include-bots \"maybe\": want true or false\nsee 'logtally run --help'\n"},
		{"run --max-line lots", "logtally run: --max-line \"lots\": want a whole number\nsee 'logtally run --help'\n"},
		{"run --window-end now", "logtally run: --window-end \"now\": want clock or log\nsee 'logtally run --help'\n"},
		{"run --log-level loud", "logtally run: --log-level \"loud\": want debug, info, warn or error\nsee 'logtally run --help'\n"},
		{"run --nginx-conf " + conf, "logtally run: --nginx-conf: " + conf + ": log_format \"main\" not found: bad log format: the file defines upstream, json_logs (choose one with --log-format-name)\nsee 'logtally run --help'\n"},
		{"run --fleet postgres://u:secret@db:notaport/x", "logtally run: --fleet: fleet URL: cannot parse `postgres://...@db:notaport/x`: invalid port\nsee 'logtally run --help'\n"},
		{"run --fleet postgres://db/x --flush-lines 2000000", "logtally run: --flush-lines 2000000: at most 1048576 with --fleet (one commit must fit in one shipped batch)\nsee 'logtally run --help'\n"},
		{"replay --fleet postgres://db/x x.log", "logtally replay: unknown flag --fleet: it is a flag of 'logtally run', not of 'logtally replay'\nsee 'logtally replay --help'\n"},
		{"replay", "logtally replay: no FILE given: name the logs to read, such as /var/log/nginx/access.log.1\nsee 'logtally replay --help'\n"},
		{"frob", "logtally: unknown command \"frob\": the commands are run, replay, report, check and version\nsee 'logtally --help'\n"},
		{"--db x.db run", "logtally: flag --db before the command: write it after run, replay or report\nsee 'logtally --help'\n"},
		{"run --keep-minutes 1000000w", "logtally run: --keep-minutes \"1000000w\": longer than the longest span logtally can represent (106751d, about 292 years): use 0 to keep it forever\nsee 'logtally run --help'\n"},
		{"replay --keep-days 30 x.log", "logtally replay: --keep-days \"30\": want a span such as 14d, 2w, 720h or 90m, or 0 to keep it forever\nsee 'logtally replay --help'\n"},
		{"report --site Blog:80", "logtally report: --site \"Blog:80\": not a site name (lower case, no port), such as blog.example.org\nsee 'logtally report --help'\n"},
		{"run --site blog", "logtally run: --site \"blog\": bad site mapping: want NAME=PATH, such as blog.example.org=/var/log/nginx/blog.access.log\nsee 'logtally run --help'\n"},
		{"run --format combined --site-field $host", "logtally run: --format: --site-field $host: the log format \"$remote_addr - $remote_user [$time_local] \\\"$request\\\" $status $body_bytes_sent \\\"$http_referer\\\" \\\"$http_user_agent\\\"\" does not log it; add it to the format, or map files to sites with --site NAME=PATH: bad log format\nsee 'logtally run --help'\n"},
		{"report --from 17/05/2015", "logtally report: --from \"17/05/2015\": want a day such as 2015-05-17\nsee 'logtally report --help'\n"},
		{"report --listen :1", "logtally report: unknown flag --listen: it is a flag of 'logtally run', not of 'logtally report'\nsee 'logtally report --help'\n"},
		{"report x.log", "logtally report: report takes no FILE, got [\"x.log\"]: it reads the database (--db)\nsee 'logtally report --help'\n"},
		{"run access.log --windw 5m", "logtally run: unknown flag --windw: did you mean --window?\nsee 'logtally run --help'\n"},
		{"replay x.log --listen :1", "logtally replay: unknown flag --listen: it is a flag of 'logtally run', not of 'logtally replay'\nsee 'logtally replay --help'\n"},
		{"run --listen localhost", "logtally run: --listen \"localhost\": want host:port, such as 127.0.0.1:8080 or :8080 (missing port in address)\nsee 'logtally run --help'\n"},
		{"run --log-format xml", "logtally run: --log-format \"xml\": want text or json\nsee 'logtally run --help'\n"},
		{"replay --max-skew x.log", "logtally replay: --max-skew \"x.log\": want a duration such as 90s, 10m or 1h30m\nsee 'logtally replay --help'\n"},
		{"run ---x", "logtally run: bad flag syntax \"---x\": write --name or --name=value\nsee 'logtally run --help'\n"},
		{"check x.db", "logtally check: check takes no FILE (x.db): name the database with --db\nsee 'logtally check --help'\n"},
		{"check --listen :1", "logtally check: unknown flag --listen: check has no such flag\nsee 'logtally check --help'\n"},
		{"run --admin-listen 0.0.0.0:8080", "logtally run: --admin-listen 0.0.0.0:8080: the admin listener (status, metrics, dashboard) would be reachable from other machines without a token: serve the public figures with --public-listen 0.0.0.0:8080 and keep the admin listener on 127.0.0.1, or require a token there with --admin-token-file FILE\nsee 'logtally run --help'\n"},
		{"run --admin-listen :8080", "logtally run: --admin-listen :8080: the admin listener (status, metrics, dashboard) would be reachable from other machines without a token: serve the public figures with --public-listen :8080 and keep the admin listener on 127.0.0.1, or require a token there with --admin-token-file FILE\nsee 'logtally run --help'\n"},
		{"run --listen 192.0.2.1:80", "logtally run: --listen 192.0.2.1:80: the admin listener (status, metrics, dashboard) would be reachable from other machines without a token: serve the public figures with --public-listen 192.0.2.1:80 and keep the admin listener on 127.0.0.1, or require a token there with --admin-token-file FILE\nsee 'logtally run --help'\n"},
		{"run --listen 127.0.0.1:1 --admin-listen 127.0.0.1:2", "logtally run: --listen 127.0.0.1:1 and --admin-listen 127.0.0.1:2: --listen is the old name of --admin-listen; give --admin-listen only\nsee 'logtally run --help'\n"},
		{"run --public-listen 127.0.0.1:8080", "logtally run: --public-listen 127.0.0.1:8080: the admin listener's address too: give each its own\nsee 'logtally run --help'\n"},
		{"run --public-listen 8081", "logtally run: --public-listen \"8081\": a port alone: write 127.0.0.1:8081 to listen on this machine only, or :8081 on every interface\nsee 'logtally run --help'\n"},
		{"run --public-listen localhost", "logtally run: --public-listen \"localhost\": want host:port, such as 127.0.0.1:8080 or :8080 (missing port in address)\nsee 'logtally run --help'\n"},
		{"run --cors-origin https://www.example.com", "logtally run: --cors-origin: the CORS headers are sent on the public listener only: add --public-listen ADDRESS, and publish that one\nsee 'logtally run --help'\n"},
		{"run --admin-token-file " + short, "logtally run: --admin-token-file " + short + ": a token of 7 bytes is too easily guessed (want 16 or more): " + tokenFix + "\nsee 'logtally run --help'\n"},
		{"run --admin-token-file " + empty, "logtally run: --admin-token-file " + empty + ": empty: " + tokenFix + "\nsee 'logtally run --help'\n"},
		{"run --admin-token-file " + lines, "logtally run: --admin-token-file " + lines + ": more than one line: the token is one line; " + tokenFix + "\nsee 'logtally run --help'\n"},
		{"run --admin-token-file /nonexistent/token", "logtally run: --admin-token-file: open /nonexistent/token: no such file or directory\nsee 'logtally run --help'\n"},
		{"run --show-rejected-lines --no-samples", "logtally run: --show-rejected-lines with --no-samples: no rejected line is kept to show; drop one of them\nsee 'logtally run --help'\n"},
		{"version extra", "logtally version: version takes no arguments, got [\"extra\"]\nsee 'logtally version --help'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+tt.args)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Errorf("exit: %v, want status 2", err)
			}
			if got := stderr.String(); got != tt.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q, want nothing", stdout.String())
			}
		})
	}
}

// TestHelpListsOnlyTheCommandsFlags: replay reads archives to their end and
// serves nothing, so the live window's and the server's flags are run's.
func TestHelpListsOnlyTheCommandsFlags(t *testing.T) {
	t.Parallel()
	help := func(cmd string) string {
		var out bytes.Buffer
		m := NewMain()
		m.Stderr = &out
		if err := m.ParseFlags([]string{cmd, "-h"}); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s -h: %v", cmd, err)
		}
		return out.String()
	}
	runOnly := []string{"--window ", "--window-end", "--max-paths", "--max-visitors", "--no-samples", "--listen", "--admin-listen", "--public-listen", "--admin-token-file", "--show-rejected-lines",
		"--debug-listen", "--cache-max-age", "--cors-origin", "--poll-interval", "--rescan-interval", "--idle-grace", "--require-files"}
	both := []string{"--db ", "--format", "--nginx-conf", "--tz", "--flush-lines", "--flush-interval", "--max-line", "--log-level",
		"--include-bots", "--keep-minutes", "--max-skew"}
	replay, run := help("replay"), help("run")
	for _, f := range runOnly {
		if strings.Contains(replay, "\n  "+f) {
			t.Errorf("replay -h lists %s", f)
		}
		if !strings.Contains(run, "\n  "+f) {
			t.Errorf("run -h lacks %s", f)
		}
	}
	for _, f := range both {
		if !strings.Contains(replay, "\n  "+f) || !strings.Contains(run, "\n  "+f) {
			t.Errorf("%s is not listed by both commands", f)
		}
	}
	if !strings.HasPrefix(replay, "Usage: logtally replay [flags] FILE...\n") {
		t.Errorf("replay -h starts %.60q", replay)
	}
	if !strings.Contains(run, "~0.8% standard error") {
		t.Errorf("run -h does not give the visitor estimate's error as docs/counting.md does (~0.8%%)")
	}
}

// TestUsageErrorIsAUsageError: every mistake ParseFlags reports is a
// *UsageError, which main turns into exit status 2.
func TestUsageErrorIsAUsageError(t *testing.T) {
	t.Parallel()
	m := NewMain()
	m.Stderr = io.Discard
	err := m.ParseFlags([]string{"run", "--window", "1500ms"})
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Command != "run" || !strings.Contains(err.Error(), "whole seconds") {
		t.Errorf("err = %v (%T), want a run UsageError about whole seconds", err, err)
	}
}
