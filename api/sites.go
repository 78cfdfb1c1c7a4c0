package api

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/logtally/logtally"
)

// Sites is what the API reads of the sites a daemon counts apart: each
// site's live window and history. Without it, ?site= knows one site,
// logtally.DefaultSite, which is the whole of what Deps answers for.
type Sites interface {
	// SiteSnapshot returns a site's live window, and false if no such site
	// is counted. It must not block.
	SiteSnapshot(name string) (*logtally.Snapshot, bool)
	// Sites lists the sites counted, with their live window, most page
	// views first.
	Sites() []logtally.SiteCount
	// SiteHistory returns a site's stored history, nil if none is stored
	// yet (a site whose first lines are not committed).
	SiteHistory(name string) History
}

// notStoredYet answers a history query for a site or counter (part)
// counted but not stored yet: its first lines are committed within a
// flush interval.
func notStoredYet(w http.ResponseWriter, part string) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, "the "+part+"'s first lines are not stored yet; ask again in a second")
}

// partServer returns a Server that answers for one part of what s counts,
// a site or a named counter: from its snapshot and its history, with s's
// configuration.
func (s *Server) partServer(part string, snapshot func() *logtally.Snapshot, history History) *Server {
	return &Server{cfg: s.cfg, cacheControl: s.cacheControl, part: part, deps: Deps{
		Snapshot: snapshot, History: history,
		Now: s.deps.Now, Zone: s.deps.Zone, Logger: s.deps.Logger, Ready: s.deps.Ready,
	}}
}

// SitesBody is the body of GET /api/v1/sites.
type SitesBody struct {
	Sites []SiteBody `json:"sites"`
}

// SiteBody is one site of /api/v1/sites: its live window.
type SiteBody struct {
	Site      string `json:"site"`
	Visitors  int64  `json:"visitors"`
	PageViews int64  `json:"pageviews"`
	Requests  int64  `json:"requests"`
}

// siteServers holds one Server per site asked for, each with its own
// cache of bodies (and so its own ETags), made on first use once the site
// has history. There are no more than the sites counted, which
// --max-sites bounds.
type siteServers struct {
	mu      sync.Mutex
	servers map[string]*Server
}

// site returns the Server that answers for one site, and false if the
// site is not counted.
func (s *Server) site(name string) (*Server, bool) {
	if s.deps.Sites == nil {
		if name != logtally.DefaultSite {
			return nil, false
		}
		return s, true
	}
	if _, ok := s.deps.Sites.SiteSnapshot(name); !ok {
		return nil, false
	}
	s.sites.mu.Lock()
	defer s.sites.mu.Unlock()
	if sub := s.sites.servers[name]; sub != nil {
		return sub, true
	}
	if s.sites.servers == nil {
		s.sites.servers = make(map[string]*Server)
	}
	sites := s.deps.Sites
	sub := s.partServer("site", func() *logtally.Snapshot { snap, _ := sites.SiteSnapshot(name); return snap },
		sites.SiteHistory(name))
	if s.deps.Fleet != nil && s.deps.Fleet.Site != nil {
		sub.deps.Fleet = s.deps.Fleet.Site(name)
		sub.fleetHistory = newFleetHistory(sub.cfg, sub.deps)
	}
	// A site whose first lines are not stored yet gets a Server of its
	// own each time, until one has its history: a Server, once shared,
	// never changes.
	if sub.deps.History != nil {
		s.sites.servers[name] = sub
	}
	return sub, true
}

// sited routes a request with ?site=NAME to handler of that site's Server,
// with the parameter taken off, and one without it to handler of s. An
// unknown site is a 404.
func (s *Server) sited(handler func(*Server) http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" || !r.URL.Query().Has("site") {
			handler(s)(w, r)
			return
		}
		name, err := single(r, "site", "")
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		q := r.URL.Query()
		q.Del("site")
		r.URL.RawQuery = q.Encode()
		sub, ok := s.site(name)
		if !ok {
			writeError(w, http.StatusNotFound, "no site "+strconv.Quote(name)+": GET /api/v1/sites lists the sites counted")
			return
		}
		handler(sub)(w, r)
	}
}

// noHistory answers a history query where no history is kept: for a
// site, one not stored yet.
func (s *Server) noHistory(w http.ResponseWriter) {
	if s.part != "" {
		notStoredYet(w, s.part)
		return
	}
	writeError(w, http.StatusNotFound, "no history is kept")
}

// sitesList answers GET /api/v1/sites.
func (s *Server) sitesList(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		if err := onlyParams(r, nil); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	body := SitesBody{Sites: []SiteBody{}}
	if s.deps.Sites == nil {
		snap := s.deps.Snapshot()
		body.Sites = append(body.Sites, SiteBody{Site: logtally.DefaultSite, Visitors: snap.Visitors,
			PageViews: snap.PageViews, Requests: snap.Requests})
	} else {
		for _, c := range s.deps.Sites.Sites() {
			body.Sites = append(body.Sites, SiteBody{Site: c.Site, Visitors: c.Visitors, PageViews: c.PageViews, Requests: c.Requests})
		}
	}
	s.serveBody(w, r, newBody(body))
}
