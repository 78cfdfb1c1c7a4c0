package api

import (
	"net/http"
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

// siteParts holds the part of each site asked for, each with its own
// caches of bodies (and so its own ETags), made on first use once the
// site has history. There are no more than the sites counted, which
// --max-sites bounds.
type siteParts struct {
	mu     sync.Mutex
	byName map[string]*part
}

// site returns the part that answers for one site, and false if the site
// is not counted.
func (s *Server) site(name string) (*part, bool) {
	if s.deps.Sites == nil {
		return &s.own, name == logtally.DefaultSite
	}
	if _, ok := s.deps.Sites.SiteSnapshot(name); !ok {
		return nil, false
	}
	s.sites.mu.Lock()
	defer s.sites.mu.Unlock()
	if p := s.sites.byName[name]; p != nil {
		return p, true
	}
	sites := s.deps.Sites
	p := &part{node: &nodeSource{part: "site", hist: sites.SiteHistory(name),
		snapshot: func() *logtally.Snapshot { snap, _ := sites.SiteSnapshot(name); return snap }}}
	if s.deps.Fleet != nil && s.deps.Fleet.Site != nil {
		p.fleet = &fleetSource{fleet: s.deps.Fleet.Site(name)}
	}
	// A site whose first lines are not stored yet gets a part of its own
	// each time, until one has its history: a part, once shared, never
	// changes.
	if p.node.hist != nil {
		if s.sites.byName == nil {
			s.sites.byName = make(map[string]*part)
		}
		s.sites.byName[name] = p
	}
	return p, true
}

// sitesList answers GET /api/v1/sites.
func (s *Server) sitesList(w http.ResponseWriter, r *request) error {
	if err := r.only(); err != nil {
		return err
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
	s.serveBody(w, r.Request, newBody(body))
	return nil
}
