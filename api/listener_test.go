package api

import (
	"encoding/base64"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"strings"
	"testing"
)

// TestListenersServeTheirRoutes: the admin listener serves every route; the
// public one only the public figures, and a 404 that names no endpoint for
// every other route. HEAD tells them apart without opening a stream: a
// route served answers it (the event stream with a 405), one not served
// with a 404.
func TestListenersServeTheirRoutes(t *testing.T) {
	s := fuzzServer()
	defer s.Close()
	for path := range routes {
		target := strings.NewReplacer("{name}/top", "show/top", "ratios/{name}", "ratios/ctr", "{name}", "show").Replace(path)
		for _, l := range []Listener{Admin, Public} {
			t.Run(l.String()+target, func(t *testing.T) {
				rec := do(s.Handler(l), "HEAD", target, nil)
				gone := rec.Code == http.StatusNotFound && rec.Header().Get("Content-Type") == "application/json"
				if want := l == Admin || publicRoutes[path]; gone == want {
					t.Errorf("HEAD %s: %d, want served %v", target, rec.Code, want)
				}
			})
		}
	}
	for _, target := range []string{"/api/v1/status", "/metrics", "/", "/readyz"} {
		rec := do(s.Handler(Public), "GET", target, nil)
		if want := `{"error":"no such endpoint: ` + target + `"}` + "\n"; rec.Code != 404 || rec.Body.String() != want {
			t.Errorf("public GET %s: %d %q, want 404 %q", target, rec.Code, rec.Body.String(), want)
		}
	}
	if rec := do(s.Handler(Public), "POST", "/api/v1/stats", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("public POST /api/v1/stats: %d, want 405: the public listener is read-only", rec.Code)
	}
}

func TestAdminToken(t *testing.T) {
	const token = "s3cret-token-of-the-admin-listener"
	basic := func(user, password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	}
	tests := []struct {
		name, token, auth string
		want              int
	}{
		{"no token set", "", "", 200},
		{"no token set, one sent", "", "Bearer whatever", 200},
		{"right", token, "Bearer " + token, 200},
		{"right, scheme in lower case", token, "bearer " + token, 200},
		{"right, as basic authentication's password", token, basic("admin", token), 200},
		{"missing", token, "", 401},
		{"wrong", token, "Bearer " + token[:len(token)-1] + "X", 401},
		{"a prefix of it", token, "Bearer " + token[:10], 401},
		{"longer", token, "Bearer " + token + "x", 401},
		{"empty", token, "Bearer ", 401},
		{"as basic authentication's user", token, basic(token, ""), 401},
		{"another scheme", token, "Token " + token, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{AdminToken: tt.token, Dashboard: true}, Deps{Snapshot: testServer().deps.Snapshot})
			h := map[string]string{}
			if tt.auth != "" {
				h["Authorization"] = tt.auth
			}
			for _, target := range []string{"/api/v1/stats", "/", "/healthz"} {
				rec := do(s, "GET", target, h)
				if rec.Code != tt.want {
					t.Errorf("GET %s: %d, want %d", target, rec.Code, tt.want)
				}
				if tt.want != 401 {
					continue
				}
				want := `{"error":"the admin API needs its token: send Authorization: Bearer TOKEN, or TOKEN as the password of basic authentication (see --admin-token-file)"}` + "\n"
				if rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" {
					t.Errorf("GET %s: %q, want %q", target, rec.Body.String(), want)
				}
				if got := rec.Header().Values("WWW-Authenticate"); len(got) != 2 || !strings.HasPrefix(got[0], "Basic ") {
					t.Errorf("GET %s: WWW-Authenticate %q, want basic (which makes a browser ask) and bearer", target, got)
				}
			}
			// The public listener asks for no token.
			if rec := do(s.Handler(Public), "GET", "/api/v1/stats", nil); rec.Code != 200 {
				t.Errorf("public GET /api/v1/stats: %d", rec.Code)
			}
		})
	}
}

// TestTokenComparedInConstantTime: the token sent is compared with the
// admin token by crypto/subtle, over the SHA-256 of both, so that neither
// how much of it is right nor its length shows in how long the answer
// takes. What the source says is what is checked: a timing test would be
// flaky on a shared machine. auth.go calls subtle.ConstantTimeCompare and
// compares no token any other way.
func TestTokenComparedInConstantTime(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "auth.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var constantTime int
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				pkg, _ := sel.X.(*ast.Ident)
				switch name := sel.Sel.Name; {
				case pkg != nil && pkg.Name == "subtle" && name == "ConstantTimeCompare":
					constantTime++
				case pkg != nil && (pkg.Name == "bytes" || pkg.Name == "strings") && (name == "Equal" || name == "Compare" || name == "HasPrefix"):
					t.Errorf("auth.go compares with %s.%s", pkg.Name, name)
				}
			}
		case *ast.BinaryExpr:
			if lit, ok := n.Y.(*ast.BasicLit); ok && lit.Value == `""` {
				return true // whether a token is set at all
			}
			if n.Op == token.EQL || n.Op == token.NEQ {
				for _, side := range []ast.Expr{n.X, n.Y} {
					if id, ok := side.(*ast.Ident); ok && (id.Name == "given" || id.Name == "token" || id.Name == "password") {
						t.Errorf("auth.go compares %s with %s", id.Name, n.Op)
					}
				}
			}
		}
		return true
	})
	if constantTime != 1 {
		t.Errorf("auth.go calls subtle.ConstantTimeCompare %d times, want once", constantTime)
	}
	sum := newTokenSum("abc")
	for given, want := range map[string]bool{"abc": true, "abd": false, "ab": false, "abcd": false, "": false} {
		if got := sum.matches(given); got != want {
			t.Errorf("matches(%q) = %v, want %v", given, got, want)
		}
	}
}

// TestRoutesListsTheTable: Routes lists every route of the table, and which
// are public, as the tests here expect them.
func TestRoutesListsTheTable(t *testing.T) {
	s := fuzzServer()
	defer s.Close()
	got := map[string]bool{}
	for _, r := range s.Routes() {
		got[r.Path] = r.Public
		if r.Stream != (r.Path == "/api/v1/events") {
			t.Errorf("%s: stream %v", r.Path, r.Stream)
		}
	}
	for path := range routes {
		if public, ok := got[path]; !ok || public != publicRoutes[path] {
			t.Errorf("%s: listed %v, public %v; want listed, public %v", path, ok, public, publicRoutes[path])
		}
	}
	if len(got) != len(routes) {
		t.Errorf("Routes lists %d routes, want %d", len(got), len(routes))
	}
}
