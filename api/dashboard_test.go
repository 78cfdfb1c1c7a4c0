package api

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

func dashboardServer(on bool) *Server {
	snap := &logtally.Snapshot{Length: time.Minute}
	return New(Config{Dashboard: on}, Deps{Snapshot: func() *logtally.Snapshot { return snap }})
}

func TestDashboardFiles(t *testing.T) {
	s := dashboardServer(true)
	tests := []struct{ target, contentType, contains string }{
		{"/", "text/html; charset=utf-8", `<script src="ui/dashboard.js" defer></script>`},
		{"/ui/dashboard.js", "text/javascript; charset=utf-8", `new EventSource(url("api/v1/events"))`},
		{"/ui/dashboard.css", "text/css; charset=utf-8", ".figures"},
		{"/ui/widget.html", "text/plain; charset=utf-8", `fetch("/api/v1/stats"`},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r := do(s, "GET", tt.target, nil)
			h := r.Header()
			if r.Code != 200 || h.Get("Content-Type") != tt.contentType || !strings.Contains(r.Body.String(), tt.contains) {
				t.Fatalf("%d %q, body has %q: %t", r.Code, h.Get("Content-Type"), tt.contains, strings.Contains(r.Body.String(), tt.contains))
			}
			if got := h.Get("Content-Security-Policy"); got != ContentSecurityPolicy ||
				!strings.HasPrefix(got, "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:") {
				t.Errorf("Content-Security-Policy = %q", got)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-cache" {
				t.Errorf("headers %v", h)
			}
			again := do(s, "GET", tt.target, map[string]string{"If-None-Match": h.Get("ETag")})
			if again.Code != 304 || again.Body.Len() != 0 {
				t.Errorf("with its ETag: %d, %d bytes; want 304", again.Code, again.Body.Len())
			}
			if head := do(s, "HEAD", tt.target, nil); head.Code != 200 || head.Body.Len() != 0 {
				t.Errorf("HEAD: %d, %d bytes", head.Code, head.Body.Len())
			}
		})
	}
	if r := do(s, "GET", "/?x=1", nil); r.Code != 400 {
		t.Errorf("/?x=1: %d, want 400", r.Code)
	}
}

func TestDashboardOff(t *testing.T) {
	s := dashboardServer(false)
	for _, target := range []string{"/", "/ui/dashboard.js"} {
		if r := do(s, "GET", target, nil); r.Code != 404 || !strings.Contains(r.Body.String(), "no such endpoint") {
			t.Errorf("%s with the dashboard off: %d %s", target, r.Code, r.Body)
		}
	}
}

// TestDashboardHasNoInlineCode keeps the page within its policy: no inline
// script, style or event handler (the policy would block them), and no
// script API that parses a string as markup or code (which would make a
// path from a log into markup).
func TestDashboardHasNoInlineCode(t *testing.T) {
	html, err := web.ReadFile("web/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`<style`, `\sstyle\s*=`, `\son[a-z]+\s*=`, `javascript:`, `https?://`} {
		if regexp.MustCompile(`(?i)` + re).Match(html) {
			t.Errorf("index.html matches %s", re)
		}
	}
	for _, m := range regexp.MustCompile(`(?is)<script[^>]*>.*?</script>`).FindAll(html, -1) {
		if !regexp.MustCompile(`^<script src="[^"]+"[^>]*></script>$`).Match(m) {
			t.Errorf("inline script: %s", m)
		}
	}
	js, err := web.ReadFile("web/dashboard.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute(\"style\"", "http://", "https://"} {
		if bad == "http://" && strings.Count(string(js), bad) == strings.Count(string(js), "http://www.w3.org/2000/svg") {
			continue // the SVG namespace is a name, not a request
		}
		if strings.Contains(string(js), bad) {
			t.Errorf("dashboard.js uses %s", bad)
		}
	}
}

// TestREADMEWidget keeps the README's header widget the snippet the page
// serves for copying.
func TestREADMEWidget(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	widget, err := web.ReadFile("web/widget.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```html\n"+string(widget)+"```\n") {
		t.Errorf("README.md has no html block equal to api/web/widget.html:\n%s", widget)
	}
}
