// Package deploy checks the files that install logtally (the Dockerfile at
// the root, the Kubernetes example) for what a careless edit breaks without
// any build failing: the database volume's owner, which addresses listen,
// which ports are published, and whether the example's nginx configuration
// loads in the image it is written for.
//
// The one idea: read each file as its tool would (the Dockerfile's final
// stage, the manifests as YAML, the nginx configuration by nginx itself) and
// work out the settings the container ends up with, flags over environment
// over the image's defaults, rather than matching text.
package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, COPY, ENV...
	args string
	line int
}

// finalStage returns the instructions of a Dockerfile's last stage, the
// image that ships, from its FROM on.
func finalStage(text string) []instruction {
	var all []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue // comments may sit between continuation lines, as Docker allows
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		body, more := strings.CutSuffix(trimmed, `\`)
		cur.WriteString(body + " ")
		if more {
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		all = append(all, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	from := 0
	for i, in := range all {
		if in.cmd == "FROM" {
			from = i
		}
	}
	return all[from:]
}

// image is what a Dockerfile's final stage sets that the checks read.
type image struct {
	user    string            // USER, as written
	env     map[string]string // ENV
	exposed []string          // EXPOSE ports, without /tcp
	volumes []string          // VOLUME paths
	// chowned maps a COPY or ADD destination to its --chown, for the
	// instructions before the VOLUME that declares it: Docker's legacy
	// builder discards what a step puts in a volume's path after VOLUME.
	chowned map[string]string
}

// readImage gathers the image settings from the final stage.
func readImage(stage []instruction) image {
	img := image{env: map[string]string{}, chowned: map[string]string{}}
	for _, in := range stage {
		words := shellWords(in.args)
		switch in.cmd {
		case "USER":
			img.user = in.args
		case "ENV":
			readEnv(words, img.env)
		case "EXPOSE":
			for _, w := range words {
				img.exposed = append(img.exposed, strings.TrimSuffix(w, "/tcp"))
			}
		case "VOLUME":
			img.volumes = append(img.volumes, jsonOrWords(in.args)...)
		case "COPY", "ADD":
			chown := ""
			var paths []string
			for _, w := range words {
				if v, ok := strings.CutPrefix(w, "--chown="); ok {
					chown = v
				} else if !strings.HasPrefix(w, "--") {
					paths = append(paths, w)
				}
			}
			if len(paths) > 0 && !slices.Contains(img.volumes, cleanPath(paths[len(paths)-1])) {
				img.chowned[cleanPath(paths[len(paths)-1])] = chown
			}
		}
	}
	return img
}

// readEnv reads ENV's two forms: KEY=VALUE... and the older KEY VALUE.
func readEnv(words []string, env map[string]string) {
	if len(words) > 0 && !strings.Contains(words[0], "=") {
		env[words[0]] = strings.Join(words[1:], " ")
		return
	}
	for _, w := range words {
		k, v, _ := strings.Cut(w, "=")
		env[k] = v
	}
}

// jsonOrWords reads an instruction's arguments in either form: a JSON
// array of strings or words.
func jsonOrWords(args string) []string {
	if !strings.HasPrefix(args, "[") {
		return shellWords(args)
	}
	var out []string
	for _, m := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(args, -1) {
		out = append(out, m[1])
	}
	return out
}

func cleanPath(p string) string { return filepath.Clean(p) }

// shellWords splits the way a Dockerfile's ENV and COPY do: on blanks,
// with quotes and backslash escapes.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quote != '\'' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			in = true
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote, in = c, true
		case quote == 0 && (c == ' ' || c == '\t'):
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
	if in {
		words = append(words, w.String())
	}
	return words
}

// imageProblems is what is wrong with an image for running logtally: each
// problem says what to write instead.
func imageProblems(img image) []string {
	var problems []string
	if !regexp.MustCompile(`^\d+(:\d+)?$`).MatchString(img.user) {
		problems = append(problems, "USER "+img.user+" is not numeric: Kubernetes' runAsNonRoot cannot verify a user name; write USER 65532:65532 (distroless nonroot)")
	}
	if !slices.Contains(img.volumes, "/data") {
		problems = append(problems, "no VOLUME /data: the database must live in a volume")
	}
	if chown, ok := img.chowned["/data"]; !ok || chown != img.user {
		made := "nothing makes it"
		if ok {
			made = "a COPY makes it with --chown=" + chown
		}
		problems = append(problems, "/data is not created owned by USER "+img.user+" before VOLUME /data ("+made+"): "+
			"a fresh named volume takes that owner, and logtally cannot create its database in a root-owned one; "+
			"COPY --chown="+img.user+" an empty directory from the build stage to /data")
	}
	if db := img.env["LOGTALLY_DB"]; !strings.HasPrefix(db, "/data/") {
		problems = append(problems, "LOGTALLY_DB="+db+" is not in the /data volume")
	}
	problems = append(problems, listenersOf(img.env, nil).problems()...)
	if pub := listenersOf(img.env, nil).public; pub == "" || !slices.Equal(img.exposed, []string{port(pub)}) {
		problems = append(problems, "EXPOSE "+strings.Join(img.exposed, " ")+": expose the public listener's port alone, and only once it is set")
	}
	return problems
}

// loadImage reads the Dockerfile at the root of the module.
func loadImage(t *testing.T) image {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	return readImage(finalStage(string(b)))
}

// TestDockerfile: the image runs as a numeric non-root user that owns
// /data, and publishes the public listener alone, its admin listener on
// the container's loopback.
func TestDockerfile(t *testing.T) {
	for _, p := range imageProblems(loadImage(t)) {
		t.Error("Dockerfile: " + p)
	}
}

// TestDockerfileProblems: the checks of TestDockerfile find what was wrong
// with the image before (a named user, a root-owned /data, the whole API
// on every interface) and each mistake alone.
func TestDockerfileProblems(t *testing.T) {
	const good = `FROM golang:1.26 AS build
RUN mkdir /out/data
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logtally /usr/local/bin/logtally
COPY --from=build --chown=65532:65532 /out/data /data
VOLUME ["/data"]
ENV LOGTALLY_DB=/data/logtally.db \
    LOGTALLY_PUBLIC_LISTEN=0.0.0.0:8080 \
    # the admin listener stays inside
    LOGTALLY_ADMIN_LISTEN=127.0.0.1:8081
EXPOSE 8080/tcp
USER 65532:65532
`
	tests := []struct {
		name, dockerfile string
		want             []string // a part of each problem, in order
	}{
		{"good", good, nil},
		{"before", `FROM golang:1.26 AS build
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logtally /usr/local/bin/logtally
VOLUME /data
ENV LOGTALLY_DB=/data/logtally.db \
    LOGTALLY_LISTEN=0.0.0.0:8080 \
    LOGTALLY_LOG_FORMAT=json
EXPOSE 8080
USER nonroot:nonroot
`, []string{"USER nonroot:nonroot is not numeric", "/data is not created owned by USER nonroot:nonroot",
			"sets LOGTALLY_LISTEN (--listen) to 0.0.0.0:8080", "no public listener",
			"the admin listener 0.0.0.0:8080 is not on loopback", "EXPOSE 8080: expose the public listener's port alone"}},
		{"chown after VOLUME", strings.Replace(good, "COPY --from=build --chown=65532:65532 /out/data /data\nVOLUME [\"/data\"]",
			"VOLUME [\"/data\"]\nCOPY --from=build --chown=65532:65532 /out/data /data", 1), []string{"/data is not created owned"}},
		{"chown to another user", strings.Replace(good, "--chown=65532:65532", "--chown=0:0", 1), []string{"/data is not created owned by USER 65532:65532"}},
		{"database outside the volume", strings.Replace(good, "/data/logtally.db", "/logtally.db", 1), []string{"LOGTALLY_DB=/logtally.db"}},
		{"admin on every interface", strings.Replace(good, "127.0.0.1:8081", "0.0.0.0:8081", 1), []string{"admin listener 0.0.0.0:8081 is not on loopback"}},
		{"admin left at its default", strings.Replace(good, "LOGTALLY_ADMIN_LISTEN=127.0.0.1:8081", "LOGTALLY_LOG_FORMAT=json", 1),
			[]string{"the public listener 0.0.0.0:8080 and the admin listener 127.0.0.1:8080 share port 8080"}},
		{"admin port exposed too", strings.Replace(good, "EXPOSE 8080/tcp", "EXPOSE 8080 8081", 1), []string{"EXPOSE 8080 8081"}},
		{"the deprecated alias", strings.Replace(good, "LOGTALLY_ADMIN_LISTEN", "LOGTALLY_LISTEN", 1), []string{"LOGTALLY_LISTEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := imageProblems(readImage(finalStage(tt.dockerfile)))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, want := range tt.want {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], want)
				}
			}
		})
	}
}
