package ingest

import (
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// Site is one site's, or one named counter's, batch of lines not yet
// committed. The goroutine that applies lines owns it.
type Site struct {
	// Batch holds the site's lines since the last commit. Replay hands it
	// to a commit and puts an empty one in its place.
	Batch   *tally.Batch
	name    string
	id      int  // index in the sites, or for a counter in the counters
	counter bool // a named counter's
	other   bool // logtally.OtherSite, which counts the sites past MaxSites
	inBatch bool // Batch holds lines: the site is among the touched
	// also are the sites of the counters that count the same as this
	// one, whose lines its batch holds too (see tally.Batch.SetAlso).
	also []string
	// group, for the batch of a group of counters, is that group.
	group *group
	// numbers are its batch's path numbers by the all-sites view's.
	numbers siteNumbers
}

// NewBatch returns an empty batch of the site's, to put in the place of
// one handed to a commit.
func (s *Site) NewBatch() *tally.Batch {
	b := siteBatch(s.name)
	b.SetAlso(s.also)
	return b
}

// Name returns the site's name; a counter's is logtally.CounterSite's.
func (s *Site) Name() string { return s.name }

// ID numbers the site from 0, the all-sites view (or with one site,
// DefaultSite), in the order sites were added; a counter's is its index in
// declaration order.
func (s *Site) ID() int { return s.id }

// Counter reports whether the site is a named counter's, or a
// breakdown's, which is counted as one.
func (s *Site) Counter() bool { return s.counter }

// SiteStats is how many sites a core counts, its limit, and how many
// lines went to OtherSite for want of room.
type SiteStats struct {
	Sites      int
	MaxSites   int
	OtherLines int64
}

// SiteStats returns the core's site counts.
func (c *Core) SiteStats() SiteStats {
	return SiteStats{Sites: int(c.router.count.Load()), MaxSites: c.cfg.MaxSites, OtherLines: c.other.Load()}
}

// newSite returns an empty site.
func newSite(name string, id int, counter bool) *Site {
	return &Site{Batch: siteBatch(name), name: name, id: id, counter: counter, other: name == logtally.OtherSite}
}

// siteBatch returns an empty batch of the site called name: a breakdown's
// keeps no visitors in its minutes (tally.Batch.SetKeysOnly).
func siteBatch(name string) *tally.Batch {
	b := tally.NewSiteBatch(name)
	b.SetKeysOnly(logtally.IsBreakdownSite(name))
	return b
}
