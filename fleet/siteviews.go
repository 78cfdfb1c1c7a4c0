package fleet

import (
	"sync"
	"time"

	"github.com/logtally/logtally"
)

// siteViews are the Refreshers of single sites, made on first ask: the
// Node's own Refresher reads the site it answers for (all sites together,
// with several), and the API asks for one site now and then.
type siteViews struct {
	mu     sync.Mutex
	byName map[string]*Refresher
	closed bool
}

// SiteView returns the fleet's last View of one site, refreshed in the
// background from the first ask on (at most Config.Refresh apart, as the
// Node's own): nil until the database is reached and the first refresh is
// done. It never blocks. Each site asked for costs a refresh a second
// until Close; the API asks only for the sites the node counts, which
// --max-sites bounds.
func (n *Node) SiteView(site string) *logtally.View {
	if site == n.site() {
		return n.Current()
	}
	st := n.store.Load()
	if st == nil {
		return nil
	}
	n.views.mu.Lock()
	defer n.views.mu.Unlock()
	if n.views.closed {
		return nil
	}
	r := n.views.byName[site]
	if r == nil {
		if n.views.byName == nil {
			n.views.byName = make(map[string]*Refresher)
		}
		r = NewRefresher(st, site, n.log)
		n.views.byName[site] = r
	}
	return r.Current()
}

// closeSiteViews stops every site's Refresher.
func (n *Node) closeSiteViews() {
	n.views.mu.Lock()
	n.views.closed = true
	rs := n.views.byName
	n.views.byName = nil
	n.views.mu.Unlock()
	for _, r := range rs {
		r.Close()
	}
}

// SiteHistory is the fleet's history of one site: the API's History for
// ?site= in fleet mode.
type SiteHistory struct {
	n    *Node
	site string
}

// SiteHistory returns the fleet's history of site.
func (n *Node) SiteHistory(site string) SiteHistory { return SiteHistory{n: n, site: site} }

// Series answers the site's history, within a time limit.
func (h SiteHistory) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	st := h.n.store.Load()
	if st == nil {
		return logtally.Series{Step: step}, ErrNotConnected
	}
	return History{Store: st, Site: h.site, Timeout: queryTimeout}.Series(from, to, step)
}

// PathCounts answers the site's page views per path today and in all,
// within a time limit.
func (h SiteHistory) PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error) {
	st := h.n.store.Load()
	if st == nil {
		return nil, ErrNotConnected
	}
	return History{Store: st, Site: h.site, Timeout: queryTimeout}.PathCounts(paths, day)
}
