package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/pgtest"
)

// testNowEnv, in the environment of a script's logtally, fixes its clock at
// that time (RFC 3339), so that what depends on the date ("today", the
// status's times) prints the same every day. Only the test binary reads it:
// the program has no such setting.
const testNowEnv = "LOGTALLY_TEST_NOW"

// testKey is the visitor-hash key of the scripts and the golden tests: with
// random day keys, as the real program draws, the sketches' estimates of
// visitors (hours, days, reports) may differ by one from run to run.
var testKey = classify.Fixed{K0: 0x5eed, K1: 0x5eed}

// scriptSetup is how the scripts' logtally differs from the real one: its
// visitor-hash key, and its clock when testNowEnv is set, and the fleet
// database's with it (the session setting logtally.now, through PGOPTIONS:
// see fleet's dbNow).
func scriptSetup(m *Main) {
	m.Keys = testKey
	if v := os.Getenv(testNowEnv); v != "" {
		now, err := time.Parse(time.RFC3339, v)
		if err != nil {
			panic(fmt.Sprintf("%s=%q: %v", testNowEnv, v, err))
		}
		m.Now = func() time.Time { return now }
		os.Setenv("PGOPTIONS", "-c logtally.now="+v)
	}
}

// TestScripts runs testdata/script/*.txtar: the command line's behaviour,
// and every example of the docs (see TestDocsExamples). Each script has
// testdata/sample.log, archive-2015.log, vhosts.log, shop.log, counters.log
// and counters.conf in its work directory, and $ADDR and $PUBLIC_ADDR, free
// loopback addresses, for a daemon's admin and public listeners.
//
// Where PostgreSQL is installed, $FLEET is the URL of a database of the
// scripts' own on the test binary's shared server (pgtest.Database), and
// the condition [postgres] holds.
//
// Besides testscript's own, scripts have two commands:
//
//	transcript FILE      runs the "$ command" lines of FILE, as a shell
//	                     would, and compares what each prints with the lines
//	                     that follow it (see runTranscript)
//	waithttp PATH TEXT   waits until GET $ADDR/PATH answers with a body
//	                     that contains TEXT
//	damagedb FILE BUCKET writes garbage over the root page of a bucket of
//	                     the database FILE (see damageBucket)
func TestScripts(t *testing.T) {
	t.Parallel()
	fleetURL := ""
	if pgtest.Available() == nil {
		fleetURL = pgtest.Database(t)
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			if err := os.MkdirAll(filepath.Join(env.WorkDir, "testdata"), 0o755); err != nil {
				return err
			}
			for _, name := range []string{"sample.log", "archive-2015.log", "vhosts.log", "shop.log", "counters.log", "counters.conf"} {
				data, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(env.WorkDir, "testdata", name), data, 0o644); err != nil {
					return err
				}
			}
			for _, name := range []string{"ADDR", "PUBLIC_ADDR"} {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					return err
				}
				env.Setenv(name, ln.Addr().String())
				defer ln.Close() // held until both are chosen, so that they differ
			}
			env.Setenv("FLEET", fleetURL)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "postgres" {
				return fleetURL != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"transcript": runTranscript,
			"waithttp":   waitHTTP,
			"damagedb":   damageDB,
		},
		RequireExplicitExec: true,
	})
}

// runTranscript runs the transcript in file args[0]: a "$ " line is a
// command, and the lines after it, up to the next "$ " line, are what it
// must print (standard output and error together, as on a terminal, less
// the log records, whose times change with every run).
// Commands are split into words as a shell does (single and double quotes),
// and may end in "| grep -E PATTERN".
// logtally is the program under test; curl is done here, with the flags the
// docs use (-s, -i, -N, --path-as-is, -X METHOD, -H 'Name: value'), and
// localhost:8080, the admin listener's default address, stands for $ADDR,
// and localhost:8081, the docs' public listener, for $PUBLIC_ADDR. curl -i
// prints the status line and the headers, without Date, whose value
// changes every second.
//
// Only the replay summary's speed ("in 0.01s (35000 lines/s)") is not
// compared: no two runs take the same time.
func runTranscript(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: transcript FILE")
	}
	text := ts.ReadFile(args[0])
	type step struct {
		cmd  string
		want strings.Builder
	}
	var steps []*step
	for _, line := range strings.SplitAfter(text, "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			steps = append(steps, &step{cmd: strings.TrimSuffix(cmd, "\n")})
			continue
		}
		if len(steps) == 0 {
			if strings.TrimSpace(line) != "" {
				ts.Fatalf("%s: output before the first command: %q", args[0], line)
			}
			continue
		}
		steps[len(steps)-1].want.WriteString(line)
	}
	if len(steps) == 0 {
		ts.Fatalf("%s: no command", args[0])
	}
	var updated strings.Builder // the transcript as the program printed it, for -update
	failed := ""
	for _, s := range steps {
		cmdline, filter, _ := strings.Cut(s.cmd, " | ")
		words, err := shellWords(cmdline)
		ts.Check(err)
		var got string
		switch words[0] {
		case "logtally":
			got = runLogtally(ts, words[1:])
		case "curl":
			got = runCurl(ts, words[1:])
		default:
			ts.Fatalf("transcript: no command %q", words[0])
		}
		if filter != "" {
			got = grep(ts, filter, got)
		}
		fmt.Fprintf(&updated, "$ %s\n%s", s.cmd, got)
		if want := s.want.String(); unspeed(got) != unspeed(want) {
			if !*update {
				ts.Fatalf("$ %s\nprinted:\n%s\nthe transcript says:\n%s", s.cmd, got, want)
			}
			failed = s.cmd
		}
		ts.Logf("$ %s: as in the transcript", s.cmd)
	}
	if failed != "" {
		rewriteScriptFile(ts, args[0], updated.String())
		ts.Fatalf("$ %s: printed something else; %s rewritten (-update)", failed, args[0])
	}
}

var update = flag.Bool("update", false, "rewrite the transcripts of testdata/script/*.txtar with what the commands print")

// rewriteScriptFile replaces the file name in the running script's archive
// with data.
func rewriteScriptFile(ts *testscript.TestScript, name, data string) {
	script := filepath.Join("testdata", "script", strings.TrimPrefix(filepath.Base(ts.Getenv("WORK")), "script-")+".txtar")
	ar, err := txtar.ParseFile(script)
	ts.Check(err)
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
		}
	}
	ts.Check(os.WriteFile(script, txtar.Format(ar), 0o644))
}

var speed = regexp.MustCompile(`in [0-9.]+s \([0-9]+ lines/s\)`)

func unspeed(s string) string {
	return pageNumber.ReplaceAllString(speed.ReplaceAllString(s, "in Ts (N lines/s)"), "${1}N")
}

// pageNumber matches the page numbers in bbolt's messages about a damaged
// page: which page a bucket's root lands on depends on the order a file's
// pages were written in, which varies from run to run.
var pageNumber = regexp.MustCompile(`(Page expected to be: |self identifies as |page )\d+`)

// grep filters out as `grep -E PATTERN` does (with Go's regular
// expressions, which agree with ERE on what the docs use).
func grep(ts *testscript.TestScript, filter, out string) string {
	words, err := shellWords(filter)
	ts.Check(err)
	if len(words) != 3 || words[0] != "grep" || words[1] != "-E" {
		ts.Fatalf("transcript: only | grep -E PATTERN is emulated, not %q", filter)
	}
	re, err := regexp.Compile(words[2])
	ts.Check(err)
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if line != "" && re.MatchString(strings.TrimSuffix(line, "\n")) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// runLogtally runs the program as the script would, and returns what it
// printed.
func runLogtally(ts *testscript.TestScript, args []string) string {
	cmd := exec.Command("logtally", args...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			ts.Fatalf("logtally: %v", err)
		}
	}
	return unlogged(out.String())
}

// unlogged drops log records ("time=... level=...") from a program's
// output: their times change with every run, and the docs leave them out.
func unlogged(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(line, "time=") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// scriptEnv is the script's environment, for a process the transcript
// starts: its PATH, home and temporary directory, GORACE (see
// childrenExitAtOnce), the test clock, and the variables that set
// logtally's flags.
func scriptEnv(ts *testscript.TestScript) []string {
	keys := []string{"PATH", "HOME", "TMPDIR", "GORACE", testNowEnv}
	for _, cmd := range commands {
		cmd.flags().VisitAll(func(f *flag.Flag) { keys = append(keys, envName(f.Name)) })
	}
	var env []string
	for _, k := range keys {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runCurl does what curl does with the flags the docs use.
func runCurl(ts *testscript.TestScript, args []string) string {
	method, include, stream := http.MethodGet, false, false
	header := http.Header{}
	var url string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s":
		case a == "-i":
			include = true
		case a == "-si" || a == "-is":
			include = true
		case a == "--path-as-is": // Go's client sends .. as it is
		case a == "-sN" || a == "-N":
			stream = true // an event stream: shown up to its first event
		case a == "-X" && i+1 < len(args):
			i++
			method = args[i]
		case a == "-H" && i+1 < len(args):
			i++
			k, v, ok := strings.Cut(args[i], ":")
			if !ok {
				ts.Fatalf("curl -H %q: want 'Name: value'", args[i])
			}
			header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case !strings.HasPrefix(a, "-") && url == "":
			url = a
		default:
			ts.Fatalf("curl: flag %q is not emulated", a)
		}
	}
	url = strings.Replace(url, "localhost:8080", ts.Getenv("ADDR"), 1)
	url = strings.Replace(url, "localhost:8081", ts.Getenv("PUBLIC_ADDR"), 1)
	if !strings.HasPrefix(url, "http://") {
		url = "http://" + url
	}
	req, err := http.NewRequest(method, url, nil)
	ts.Check(err)
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	var body []byte
	if stream {
		body = firstEvent(ts, resp.Body)
	} else {
		body, err = io.ReadAll(resp.Body)
		ts.Check(err)
	}
	var out strings.Builder
	if include {
		fmt.Fprintf(&out, "%s %s\n", resp.Proto, resp.Status)
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range resp.Header {
				if !yield(k) {
					return
				}
			}
		}) {
			if k == "Date" {
				continue
			}
			for _, v := range resp.Header[k] {
				fmt.Fprintf(&out, "%s: %s\n", k, v)
			}
		}
		out.WriteString("\n")
	}
	out.Write(body)
	return out.String()
}

// firstEvent reads a Server-Sent Events stream up to the blank line that
// ends its first event, as a person watching `curl -N` sees it before
// pressing Ctrl-C.
func firstEvent(ts *testscript.TestScript, r io.Reader) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(r)
	data := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "data:") {
			data = true
		} else if sc.Text() == "" && data {
			return out.Bytes()
		}
	}
	ts.Fatalf("event stream ended before its first event: %v\n%s", sc.Err(), out.String())
	return nil
}

// shellWords splits a command line into words as sh does, for the quoting
// the docs use: single quotes, double quotes and backslashes.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' && i+1 < len(line) {
				i++
				w.WriteByte(line[i])
			} else {
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if in {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}

// waitHTTP waits until GET http://$ADDR/PATH answers with a body that
// contains TEXT: the daemon is up and has read what the script expects.
func waitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waithttp PATH TEXT")
	}
	url := "http://" + ts.Getenv("ADDR") + args[0]
	deadline := time.Now().Add(20 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), args[1]) {
				return
			}
			last = string(body)
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("GET %s: no %q in 20 s; last answer: %s", args[0], args[1], last)
}

// TestShellWords splits as sh does for the quoting the docs use.
func TestShellWords(t *testing.T) {
	t.Parallel()
	got, err := shellWords(`curl -si -H 'If-None-Match: "11cdkac93akrm"' "a b"\ c localhost:8080/x`)
	want := []string{"curl", "-si", "-H", `If-None-Match: "11cdkac93akrm"`, "a b c", "localhost:8080/x"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("shellWords = %q, %v; want %q", got, err, want)
	}
}
