package deploy

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/logtally/logtally/parser"
)

const examplePath = "kubernetes/nginx-logtally.yaml"

// manifest is the part of a Kubernetes object that the checks read.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct{ Name string }
	Data     map[string]string `yaml:"data"` // a ConfigMap's
	Spec     struct {
		Template struct{ Spec podSpec } // a Deployment's
		Ports    []struct {             // a Service's
			Port       int
			TargetPort any `yaml:"targetPort"`
		}
	}
}

type podSpec struct {
	Containers []container
	Volumes    []struct {
		Name      string
		ConfigMap *struct{ Name string } `yaml:"configMap"`
	}
}

type container struct {
	Name, Image  string
	Args         []string
	Env          []struct{ Name, Value string }
	Ports        []containerPort
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	StartupProbe   *probe `yaml:"startupProbe"`
}

type containerPort struct {
	Name          string
	ContainerPort int `yaml:"containerPort"`
}

type probe struct {
	HTTPGet   *struct{ Port any } `yaml:"httpGet"`
	TCPSocket *struct{ Port any } `yaml:"tcpSocket"`
}

// example is the Kubernetes example: its nginx ConfigMap, the pod and the
// Service.
type example struct {
	configMap       manifest
	pod             podSpec
	service         manifest
	nginx, logtally container
	imageEnv        map[string]string // the Dockerfile's ENV
}

// loadExample reads the example and the environment the logtally image
// gives its container.
func loadExample(t *testing.T) example {
	t.Helper()
	text, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	return parseExample(t, string(text))
}

// parseExample reads manifests holding one object of each kind the
// example has.
func parseExample(t *testing.T, text string) example {
	t.Helper()
	var ex example
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", examplePath, err)
		}
		switch m.Kind {
		case "ConfigMap":
			ex.configMap = m
		case "Deployment":
			ex.pod = m.Spec.Template.Spec
		case "Service":
			ex.service = m
		}
	}
	for _, c := range ex.pod.Containers {
		switch {
		case strings.HasPrefix(c.Image, "nginx:"):
			ex.nginx = c
		case strings.HasPrefix(c.Image, "logtally:"):
			ex.logtally = c
		}
	}
	if ex.nginx.Name == "" || ex.logtally.Name == "" || ex.configMap.Data == nil || ex.service.Kind == "" {
		t.Fatalf("%s: want a ConfigMap, a Deployment of an nginx and a logtally container, and a Service", examplePath)
	}
	ex.imageEnv = loadImage(t).env
	return ex
}

// env is the logtally container's environment: the image's, overlaid by
// the container's own.
func (ex example) env() map[string]string {
	env := maps.Clone(ex.imageEnv)
	for _, e := range ex.logtally.Env {
		env[e.Name] = e.Value
	}
	return env
}

// configFile returns the text of the ConfigMap key that path names in c's
// file system, and whether path lies in a mount of the ConfigMap.
func (ex example) configFile(c container, path string) (string, bool) {
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range ex.pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == ex.configMap.Metadata.Name {
				text, ok := ex.configMap.Data[rel]
				return text, ok
			}
		}
	}
	return "", false
}

// format compiles the log format that logtally's container reads with,
// as its flags and environment set the parser: from the ConfigMap when
// --nginx-conf names a file of it.
func (ex example) format(t *testing.T) *parser.Format {
	t.Helper()
	var cfg parser.Config
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	env := ex.env()
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := env["LOGTALLY_"+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))]; ok {
			fs.Set(f.Name, v)
		}
	})
	for i, a := range ex.logtally.Args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok && i+1 < len(ex.logtally.Args) {
			value = ex.logtally.Args[i+1]
		}
		if strings.HasPrefix(a, "-") && fs.Lookup(name) != nil {
			if err := fs.Set(name, value); err != nil {
				t.Fatalf("logtally's %s: %v", a, err)
			}
		}
	}
	if cfg.NginxConf != "" {
		text, ok := ex.configFile(ex.logtally, cfg.NginxConf)
		if !ok {
			t.Fatalf("logtally's --nginx-conf %s is not a file of the ConfigMap %s mounted in its container", cfg.NginxConf, ex.configMap.Metadata.Name)
		}
		cfg.NginxConf = filepath.Join(t.TempDir(), filepath.Base(cfg.NginxConf))
		if err := os.WriteFile(cfg.NginxConf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := cfg.Compile()
	if err != nil {
		t.Fatalf("logtally's log format: %v", err)
	}
	return f
}

// portOf resolves a Service's targetPort or a probe's port, a number or
// the name of one of c's ports, to a number; 0 if c has no port of that
// name.
func portOf(c container, p any) int {
	if n, err := strconv.Atoi(fmt.Sprint(p)); err == nil {
		return n
	}
	for _, cp := range c.Ports {
		if fmt.Sprint(p) == cp.Name {
			return cp.ContainerPort
		}
	}
	return 0
}

// declares tells whether c declares the port numbered n.
func declares(c container, n int) bool {
	return slices.ContainsFunc(c.Ports, func(cp containerPort) bool { return cp.ContainerPort == n })
}

// listenerProblems is what is wrong with where the example's logtally
// listens and who reaches it: its public listener alone may be reached
// from outside the pod, by the Service, the kubelet's probes and nginx;
// its admin listener stays on the pod's loopback.
func (ex example) listenerProblems() []string {
	l := listenersOf(ex.env(), ex.logtally.Args)
	problems := l.problems()
	public, _ := strconv.Atoi(port(l.public))
	if len(ex.logtally.Ports) != 1 || ex.logtally.Ports[0].ContainerPort != public {
		problems = append(problems, fmt.Sprintf("logtally's container ports %v: want the public listener's alone, %d", ex.logtally.Ports, public))
	}
	for _, p := range []*probe{ex.logtally.LivenessProbe, ex.logtally.ReadinessProbe, ex.logtally.StartupProbe} {
		var port any
		switch {
		case p == nil:
			continue
		case p.HTTPGet != nil:
			port = p.HTTPGet.Port
		case p.TCPSocket != nil:
			port = p.TCPSocket.Port
		}
		if got := portOf(ex.logtally, port); got != public {
			problems = append(problems, fmt.Sprintf("a probe of logtally asks port %v: the kubelet reaches only the public listener, %d", port, public))
		}
	}
	for _, sp := range ex.service.Spec.Ports {
		if !declares(ex.nginx, portOf(ex.nginx, sp.TargetPort)) && portOf(ex.logtally, sp.TargetPort) != public {
			problems = append(problems, fmt.Sprintf("the Service publishes port %v: want nginx's or logtally's public listener's", sp.TargetPort))
		}
	}
	conf := strings.Join(slices.Collect(maps.Values(ex.configMap.Data)), "\n")
	proxies := regexp.MustCompile(`proxy_pass\s+http://([^/;\s]+)`).FindAllStringSubmatch(conf, -1)
	if len(proxies) == 0 {
		problems = append(problems, "nginx proxies nothing to logtally: the page's counter needs location = /api/v1/stats")
	}
	for _, m := range proxies {
		if port(m[1]) != strconv.Itoa(public) {
			problems = append(problems, fmt.Sprintf("nginx proxies to %s: want logtally's public listener, port %d", m[1], public))
		}
	}
	return problems
}

// TestKubernetesListeners: the example's logtally is reached from outside
// the pod on its public listener alone.
func TestKubernetesListeners(t *testing.T) {
	for _, p := range loadExample(t).listenerProblems() {
		t.Errorf("%s: %s", examplePath, p)
	}
}

// TestKubernetesListenersProblems: the checks of TestKubernetesListeners
// find each way of reaching the admin listener from outside, or of
// publishing more than the public one.
func TestKubernetesListenersProblems(t *testing.T) {
	good, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new string
		want           []string // a part of each problem, in order
	}{
		{"as it is", "", "", nil},
		{"admin on the pod's address", "--admin-listen=127.0.0.1:8081", "--admin-listen=0.0.0.0:8081",
			[]string{"the admin listener 0.0.0.0:8081 is not on loopback"}},
		{"the deprecated flag", "--admin-listen=", "--listen=", []string{"sets LOGTALLY_LISTEN (--listen) to 127.0.0.1:8081"}},
		{"the admin port declared", "ports: [{name: public, containerPort: 8080}]", "ports: [{name: public, containerPort: 8080}, {containerPort: 8081}]",
			[]string{"logtally's container ports"}},
		{"a probe of the admin listener", "httpGet: {path: /api/v1/stats, port: public}", "httpGet: {path: /readyz, port: 8081}",
			[]string{"a probe of logtally asks port 8081"}},
		{"the Service on the admin port", "ports: [{port: 80, targetPort: 80}]", "ports: [{port: 80, targetPort: 80}, {port: 8081, targetPort: 8081}]",
			[]string{"the Service publishes port 8081"}},
		{"nginx proxying to the admin listener", "proxy_pass http://127.0.0.1:8080;", "proxy_pass http://127.0.0.1:8081;",
			[]string{"nginx proxies to 127.0.0.1:8081"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := string(good)
			if tt.old != "" {
				text = mustReplace(t, text, tt.old, tt.new)
			}
			got := parseExample(t, text).listenerProblems()
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
