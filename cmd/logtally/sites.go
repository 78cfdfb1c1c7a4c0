package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/storage"
)

// sitePatterns sets what is followed or replayed, c.patterns: the FILEs,
// then each --site's path (for replay, a glob's matches, which must
// exist), and which site each of them counts under.
func (c *countConfig) sitePatterns(replay bool) error {
	c.patterns = slices.Clone(c.Files)
	patternSites := make([]string, len(c.Files))
	for _, f := range c.Pipeline.siteFiles() {
		paths := []string{f.Path}
		if replay {
			matches, err := filepath.Glob(f.Path)
			if err != nil || len(matches) == 0 {
				return fmt.Errorf("--site %s=%s: no such file", f.Site, f.Path)
			}
			paths = matches
		}
		for _, p := range paths {
			c.patterns = append(c.patterns, p)
			patternSites = append(patternSites, f.Site)
		}
	}
	c.Pipeline.setSites(patternSites, c.Parser.SiteField != "")
	return nil
}

// allSitesView makes sure the store has the all-sites view before sites
// are counted: a file that counted one site so far gets it as a copy of
// that site, whose lines were all there were.
func allSitesView(store *storage.Store, log *slog.Logger, path string) error {
	copied, err := store.CopySite(logtally.DefaultSite, logtally.AllSites)
	if err != nil {
		return fmt.Errorf("all-sites view: %w", err)
	}
	if copied {
		log.Info("counting sites apart from now on: the history so far stays under site default, and is the start of the all-sites view",
			"db", path)
	}
	return nil
}

// holdsSites reports whether the store was counted per site: it has the
// all-sites view, which counting per site made.
func holdsSites(store *storage.Store) bool {
	_, ok := store.Site(logtally.AllSites)
	return ok
}

// storedSites returns the sites the store holds lines of.
func storedSites(store *storage.Store) ([]string, error) {
	var sites []string
	for _, name := range store.Sites() {
		if logtally.IsDimensionSite(name) {
			continue // a named counter's or a breakdown's: its window is restored as the pipeline's counters are
		}
		st, _ := store.Site(name)
		if _, ok, err := st.Last(); err != nil {
			return nil, err
		} else if ok {
			sites = append(sites, name)
		}
	}
	return sites, nil
}

// storeCounters gives each of m's counters its site in the store before a
// line is counted, so that one has a history from the start, of zeros
// until it counts: the API answers it, and report lists it. A counter that
// counts the same as one declared before it (counter.Matcher.Same) shares
// that one's history, unless it holds one of its own; one that shared
// another history gets a copy of it. Counters declared apart that have
// counted alike so far may share one too: each commit ends a share whose
// counters count apart from then on (see storage/share_commit.go).
func storeCounters(store *storage.Store, m *counter.Matcher) error {
	cs := m.Counters()
	var names []string
	for _, c := range cs {
		names = append(names, logtally.CounterSite(c.Name))
	}
	var shares []storage.Share
	for i, name := range names {
		lead := names[m.Same(i)]
		if lead == name {
			continue // a history it shares is the commits' to settle (storage.Store.Commit)
		}
		as := store.Shares(lead) // the lead may share one, counting alike
		if held := store.Shares(name); held != name && held != as {
			if err := store.Unshare(name); err != nil {
				return err
			}
		}
		shares = append(shares, storage.Share{Site: name, As: as})
	}
	if _, err := store.ShareSites(shares...); err != nil {
		return err
	}
	return store.AddSites(names...)
}

// apiSites is what the API reads of the sites: the pipeline's live windows
// and the store's history.
type apiSites struct {
	*pipeline
	store   *storage.Store
	matcher *counter.Matcher
	deriver *breakdown.Deriver
}

// SiteHistory implements api.Sites.
func (a apiSites) SiteHistory(name string) api.History {
	if st, ok := a.store.Site(name); ok {
		return st
	}
	return nil
}

// Declared implements api.Counters.
func (a apiSites) Declared() ([]counter.Counter, []counter.Ratio) {
	return a.matcher.Counters(), a.matcher.Ratios()
}

// CounterHistory implements api.Counters.
func (a apiSites) CounterHistory(name string) api.History {
	return a.SiteHistory(a.store.Shares(logtally.CounterSite(name)))
}

// BreakdownList implements api.Breakdowns.
func (a apiSites) BreakdownList() []api.Breakdown {
	var out []api.Breakdown
	for _, b := range breakdown.All() {
		ab := api.Breakdown{Name: b.String(), On: a.deriver.On(b), PerRequest: breakdown.PerRequest(b)}
		switch {
		case ab.On:
		case b == breakdown.Country:
			ab.Off = "it needs --geoip FILE.mmdb (a MaxMind-format country database), and country in --breakdowns"
		default:
			ab.Off = "add " + b.String() + " to --breakdowns"
		}
		out = append(out, ab)
	}
	return out
}

// BreakdownHistory implements api.Breakdowns.
func (a apiSites) BreakdownHistory(name string) api.History {
	return a.SiteHistory(logtally.BreakdownSite(name))
}
