package api

import (
	"embed"
	"hash/fnv"
	"net/http"
	"strconv"
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
	data        []byte
	contentType []string
	etag        []string
}

// dashboardFiles are the routes of the dashboard and the files they serve.
// The page refers to the others by relative URLs (ui/dashboard.js,
// api/v1/events), so it works as well behind a proxy that serves the API
// under a prefix. The widget is served as text: it is for copying, not for
// running here.
var dashboardFiles = []struct{ route, file, contentType string }{
	{"/", "web/index.html", "text/html; charset=utf-8"},
	{"/ui/dashboard.js", "web/dashboard.js", "text/javascript; charset=utf-8"},
	{"/ui/dashboard.css", "web/dashboard.css", "text/css; charset=utf-8"},
	{"/ui/widget.html", "web/widget.html", "text/plain; charset=utf-8"},
}

// dashboard registers the page's routes with get.
func (s *Server) dashboard(get func(string, http.HandlerFunc)) {
	for _, f := range dashboardFiles {
		data, err := web.ReadFile(f.file)
		if err != nil {
			panic(err) // embedded at build time: missing is a bug
		}
		h := fnv.New64a()
		h.Write(data)
		a := &asset{data: data, contentType: []string{f.contentType},
			etag: []string{`"` + strconv.FormatUint(h.Sum64(), 36) + `"`}}
		get(f.route, func(w http.ResponseWriter, r *http.Request) { serveAsset(w, r, a) })
	}
}

var (
	csp        = []string{ContentSecurityPolicy}
	noSniff    = []string{"nosniff"}
	noReferrer = []string{"no-referrer"}
	revalidate = []string{"no-cache"} // kept, but checked with the ETag: an upgrade shows at once
)

// serveAsset writes an embedded file, or 304 when the client has it.
func serveAsset(w http.ResponseWriter, r *http.Request, a *asset) {
	if r.URL.RawQuery != "" {
		if err := onlyParams(r, nil); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	h := w.Header()
	h["Content-Type"] = a.contentType
	h["Content-Security-Policy"] = csp
	h["X-Content-Type-Options"] = noSniff
	h["Referrer-Policy"] = noReferrer
	h["Cache-Control"] = revalidate
	h["Etag"] = a.etag
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatch(inm, a.etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(len(a.data))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(a.data)
	}
}
