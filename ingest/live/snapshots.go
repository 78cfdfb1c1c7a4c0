package live

import (
	"cmp"
	"slices"

	"github.com/logtally/logtally"
)

// SiteSnapshot returns one site's live window, and false if the loop
// counts no such site. Without sites of their own, DefaultSite is the one.
func (l *Loop) SiteSnapshot(name string) (*logtally.Snapshot, bool) {
	w, ok := l.wins.index.Load().byName[name]
	if !ok {
		return nil, false
	}
	return w.Current(), true
}

// Sites returns every site counted with its live window, most page views
// first, then by name.
func (l *Loop) Sites() []logtally.SiteCount {
	idx := l.wins.index.Load()
	out := make([]logtally.SiteCount, 0, len(idx.names))
	for _, name := range idx.names {
		c := logtally.SiteCount{Site: name}
		if s := idx.byName[name].Current(); s != nil {
			c.Visitors, c.PageViews, c.Requests = s.Visitors, s.PageViews, s.Requests
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b logtally.SiteCount) int { return cmp.Compare(b.PageViews, a.PageViews) })
	return out
}

// CounterSnapshot returns a named counter's live window (its keys in
// Pages), and false if no such counter is declared.
func (l *Loop) CounterSnapshot(name string) (*logtally.Snapshot, bool) {
	return l.counterSnapshot(logtally.CounterSite(name))
}

// BreakdownSnapshot returns a breakdown's live window (its keys in Pages),
// and false if the breakdown is not on.
func (l *Loop) BreakdownSnapshot(name string) (*logtally.Snapshot, bool) {
	return l.counterSnapshot(logtally.BreakdownSite(name))
}

// counterSnapshot returns the live window of a counter's or breakdown's
// site.
func (l *Loop) counterSnapshot(site string) (*logtally.Snapshot, bool) {
	w, ok := l.wins.byCounter[site]
	if !ok {
		return nil, false
	}
	return w.Load().Current(), true
}
