package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unit is a systemd unit file as systemd reads it: each section's
// settings, in order, a key given more than once keeping every value.
type unit map[string][][2]string

// readUnit reads the unit file at path: "[Section]" lines, "Key=value"
// lines (a trailing backslash continues one), comments with # or ;.
func readUnit(t *testing.T, path string) unit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section, pending := "", ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if pending == "" && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if body, more := strings.CutSuffix(line, `\`); more {
			pending += body + " "
			continue
		}
		line, pending = pending+line, ""
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not a setting: %q", path, line)
		}
		u[section] = append(u[section], [2]string{strings.TrimSpace(key), strings.TrimSpace(value)})
	}
	return u
}

// values returns every value of key in section.
func (u unit) values(section, key string) []string {
	var out []string
	for _, kv := range u[section] {
		if kv[0] == key {
			out = append(out, kv[1])
		}
	}
	return out
}

// environment returns the variables the Environment= lines of the
// [Service] section set, then those of overrides (a drop-in's), as
// systemd reads "A=b" and "\"A=b c\"".
func (u unit) environment(overrides ...string) map[string]string {
	env := map[string]string{}
	for _, v := range append(u.values("Service", "Environment"), overrides...) {
		v = strings.TrimSuffix(strings.TrimPrefix(v, `"`), `"`)
		if name, value, ok := strings.Cut(v, "="); ok {
			env[name] = value
		}
	}
	return env
}

// execStart returns the command line the unit runs, as systemd expands
// it in env: a word "$NAME" becomes the variable's value split at white
// space, a word "${NAME}" its value as one word, a quoted word is taken as
// it is; no glob is expanded.
func (u unit) execStart(t *testing.T, env map[string]string) []string {
	t.Helper()
	lines := u.values("Service", "ExecStart")
	if len(lines) != 1 {
		t.Fatalf("ExecStart = %q, want one", lines)
	}
	var argv []string
	for _, w := range strings.Fields(lines[0]) {
		switch {
		case strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}"):
			argv = append(argv, env[w[2:len(w)-1]])
		case strings.HasPrefix(w, "$"):
			argv = append(argv, strings.Fields(env[w[1:]])...)
		case len(w) > 1 && (w[0] == '\'' || w[0] == '"') && w[len(w)-1] == w[0] && !strings.Contains(w[1:len(w)-1], "$"):
			argv = append(argv, w[1:len(w)-1]) // quoted: as it is
		case strings.ContainsAny(w, `$'"`):
			t.Fatalf("ExecStart word %q: quotes and variables within words are not read here", w)
		default:
			argv = append(argv, w)
		}
	}
	return argv
}

// TestSystemdUnitFollowsFilesOfTheEnvironment: the followed files are
// LOGTALLY_FILES, which a drop-in changes without rewriting ExecStart
// (Apache's logs), each word one FILE and its glob left to logtally.
func TestSystemdUnitFollowsFilesOfTheEnvironment(t *testing.T) {
	u := readUnit(t, "logtally.service")
	tests := []struct {
		name      string
		overrides []string
		want      []string
	}{
		{"as installed", nil, []string{"/usr/local/bin/logtally", "run", "/var/log/nginx/access.log*"}},
		{"apache", []string{`"LOGTALLY_FILES=/var/log/apache2/access.log*"`},
			[]string{"/usr/local/bin/logtally", "run", "/var/log/apache2/access.log*"}},
		{"two sites", []string{`"LOGTALLY_FILES=/var/log/nginx/blog.log* /var/log/nginx/shop.log*"`},
			[]string{"/usr/local/bin/logtally", "run", "/var/log/nginx/blog.log*", "/var/log/nginx/shop.log*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := u.execStart(t, u.environment(tt.overrides...)); !slices.Equal(got, tt.want) {
				t.Errorf("ExecStart runs %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSystemdUnitPathsMayBeMissing: every path the sandbox settings name
// outside logtally's own state directory starts with "-", so that a host
// without it (no nginx, an Apache host) still starts the unit: systemd
// refuses to start a unit whose ReadOnlyPaths= names a path that does not
// exist.
func TestSystemdUnitPathsMayBeMissing(t *testing.T) {
	u := readUnit(t, "logtally.service")
	state := u.values("Service", "StateDirectory")
	for _, key := range []string{"ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths"} {
		for _, v := range u.values("Service", key) {
			for _, p := range strings.Fields(v) {
				own := slices.ContainsFunc(state, func(d string) bool { return strings.HasPrefix(p, filepath.Join("/var/lib", d)) })
				if !own && !strings.HasPrefix(p, "-") {
					t.Errorf("%s=%s: %s is not on every host; write -%s", key, v, p, p)
				}
			}
		}
	}
}

// TestBuildScriptPrintsTheVersion: deploy/build.sh with an OUTPUT of a bare
// name writes it where it was run and runs it for its version: a native
// build is not reported as cross-compiled.
func TestBuildScriptPrintsTheVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program (-short)")
	}
	for _, tool := range []string{"sh", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: %v", tool, err)
		}
	}
	script, err := filepath.Abs("build.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", script, "logtally")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-test", "COMMIT=0123456789ab", "GOOS=", "GOARCH=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	if want := "built logtally: logtally v0.0.0-test (commit 0123456789ab, go"; !strings.HasPrefix(string(out), want) {
		t.Errorf("build.sh printed %q, want it to start %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "logtally")); err != nil {
		t.Errorf("no binary where build.sh was run: %v", err)
	}
}
