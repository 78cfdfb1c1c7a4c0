package api

import "net/http"

// Listener is who a listener answers: the operator, or anyone. The daemon
// serves the two on addresses of their own (--admin-listen and
// --public-listen), so that publishing the figures a site shows its
// visitors never publishes what only its operator should see: the status
// (files, rejected lines), the metrics and the dashboard.
type Listener int

const (
	// Admin serves every endpoint, behind the admin token if one is set
	// (Config.AdminToken), and never sends CORS headers: no other origin
	// has anything to read there.
	Admin Listener = iota
	// Public serves only the public figures, read-only: the live window,
	// pages, series, sites, counters and ratios, the event stream and the
	// header widget's snippet; every other path is a 404. It alone sends
	// the CORS headers of Config.CORSOrigins.
	Public
)

func (l Listener) String() string {
	if l == Public {
		return "public"
	}
	return "admin"
}

// Handler returns the handler of listener l.
func (s *Server) Handler(l Listener) http.Handler {
	if l == Public {
		return s.public
	}
	return s.admin
}

// ServeHTTP implements http.Handler: it answers as the admin listener does.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.admin.ServeHTTP(w, r)
}

// chain is the part of the chain before the router that a listener adds
// (see routes): CORS on the public listener, the token on the admin one,
// then the refusal of a request no endpoint could read.
func (s *Server) chain(l Listener, router http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l == Public {
			if s.cors(w, r) {
				return
			}
		} else if err := s.authorize(w, r); err != nil {
			s.metrics.count("unauthorized", statusOf(asError(err).Code))
			s.writeError(w, r, err)
			return
		}
		if err := refused(r); err != nil {
			s.metrics.count("refused", statusOf(asError(err).Code))
			s.writeError(w, r, err)
			return
		}
		router.ServeHTTP(w, r)
	})
}

var varyOrigin = []string{"Origin"}

// cors adds the CORS headers for an allowed origin, and answers preflight
// requests itself: 204 with the CORS headers for an allowed origin, and a
// JSON 403 that says so for any other, rather than the 405 an OPTIONS
// request would get from the router, which looks like a routing mistake.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) (done bool) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	allowed := ""
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" {
			allowed = "*"
			break
		}
		if o == origin {
			allowed = origin
			break
		}
	}
	if allowed == "" {
		if preflight {
			s.writeError(w, r, &Error{Code: CodeForbidden,
				Message: "origin " + origin + " may not read this API (allow it with --cors-origin)"})
			return true
		}
		return false
	}
	h := w.Header()
	h["Access-Control-Allow-Origin"] = []string{allowed}
	h["Vary"] = varyOrigin
	if preflight {
		h["Access-Control-Allow-Methods"] = []string{"GET, HEAD, OPTIONS"}
		h["Access-Control-Allow-Headers"] = []string{"If-None-Match"}
		h["Access-Control-Max-Age"] = []string{"600"}
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	h["Access-Control-Expose-Headers"] = []string{"ETag"}
	return false
}
