package api

import (
	"embed"
	"net/http"
)

// web holds the dashboard: one page, its script and style sheet, and the
// header widget's snippet. No build step and no external request: the
// page draws its charts itself, as SVG, and asks only this API.
//
//go:embed web
var web embed.FS

// ContentSecurityPolicy is sent with every dashboard file: the page may run
// only its own script and style sheet and talk only to its own origin, so a
// path or user agent from a log that slipped into the page as markup could
// still run nothing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	*body
	contentType []string
}

// dashboardFiles are the routes of the dashboard and the files they serve.
// The page refers to the others by relative URLs (ui/dashboard.js,
// api/v1/events), so it works as well behind a proxy that serves the API
// under a prefix. The widget is served as text: it is for copying, not for
// running here; it is the one file of them on the public listener, since
// it is what a site publishes anyway.
var dashboardFiles = []struct {
	route, file, contentType string
	public                   bool
}{
	{"/", "web/index.html", "text/html; charset=utf-8", false},
	{"/ui/dashboard.js", "web/dashboard.js", "text/javascript; charset=utf-8", false},
	{"/ui/dashboard.css", "web/dashboard.css", "text/css; charset=utf-8", false},
	{"/ui/widget.html", "web/widget.html", "text/plain; charset=utf-8", true},
}

// dashboard returns the page's endpoints.
func dashboard() []endpoint {
	var endpoints []endpoint
	for _, f := range dashboardFiles {
		data, err := web.ReadFile(f.file)
		if err != nil {
			panic(err) // embedded at build time: missing is a bug
		}
		a := &asset{body: bodyOf(data), contentType: []string{f.contentType}}
		endpoints = append(endpoints, endpoint{path: f.route, h: a.serve, public: f.public})
	}
	return endpoints
}

var (
	csp        = []string{ContentSecurityPolicy}
	noSniff    = []string{"nosniff"}
	noReferrer = []string{"no-referrer"}
	revalidate = []string{"no-cache"} // kept, but checked with the ETag: an upgrade shows at once
)

// serve writes the file, or 304 when the client has it.
func (a *asset) serve(w http.ResponseWriter, r *request) error {
	if err := r.only(); err != nil {
		return err
	}
	h := w.Header()
	h["Content-Type"] = a.contentType
	h["Content-Security-Policy"] = csp
	h["X-Content-Type-Options"] = noSniff
	h["Referrer-Policy"] = noReferrer
	h["Cache-Control"] = revalidate
	a.body.serve(w, r.Request)
	return nil
}
