package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/storage"
)

// sitePatterns sets what is followed or replayed, m.patterns: the FILEs,
// then each --site's path (for replay, a glob's matches), and which site
// each of them counts under.
func (m *Main) sitePatterns() error {
	m.patterns = slices.Clone(m.Files)
	patternSites := make([]string, len(m.Files))
	for _, f := range m.Ingest.siteFiles() {
		paths := []string{f.Path}
		if m.Command == "replay" {
			matches, err := filepath.Glob(f.Path)
			if err != nil || len(matches) == 0 {
				return fmt.Errorf("--site %s=%s: no such file", f.Site, f.Path)
			}
			paths = matches
		}
		for _, p := range paths {
			m.patterns = append(m.patterns, p)
			patternSites = append(patternSites, f.Site)
		}
	}
	m.Ingest.setSites(patternSites, m.Parser.SiteField != "")
	return nil
}

// multiSite reports whether lines are counted per site: with --site or
// --site-field.
func (m *Main) multiSite() bool { return m.Ingest.multiSite() }

// allSitesView makes sure the store has the all-sites view before sites
// are counted: a file that counted one site so far gets it as a copy of
// that site, whose lines were all there were.
func (m *Main) allSitesView() error {
	copied, err := m.store.CopySite(logtally.DefaultSite, logtally.AllSites)
	if err != nil {
		return fmt.Errorf("all-sites view: %w", err)
	}
	if copied {
		m.Logger.Info("counting sites apart from now on: the history so far stays under site default, and is the start of the all-sites view",
			"db", m.Store.Path)
	}
	return nil
}

// storedSites returns the sites the store holds lines of.
func (m *Main) storedSites() ([]string, error) {
	var sites []string
	for _, name := range m.store.Sites() {
		if logtally.IsCounterSite(name) {
			continue // a named counter's: its window is restored as the pipeline's counters are
		}
		st, _ := m.store.Site(name)
		if _, ok, err := st.Last(); err != nil {
			return nil, err
		} else if ok {
			sites = append(sites, name)
		}
	}
	return sites, nil
}

// apiSites is what the API reads of the sites: the pipeline's live windows
// and the store's history.
type apiSites struct {
	*pipeline
	store   *storage.Store
	matcher *counter.Matcher
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
	return a.SiteHistory(logtally.CounterSite(name))
}
