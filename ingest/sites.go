package ingest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	"github.com/logtally/logtally/window"
)

// DefaultMaxSites is how many sites a pipeline counts apart by default.
const DefaultMaxSites = 1000

// SiteFile maps the lines of the files a path or glob names to a site:
// --site NAME=PATH.
type SiteFile struct {
	Site string // a site name, as logtally.NormalizeSite gives it
	Path string // a path or a glob
}

// siteFiles is the repeatable --site flag.
type siteFiles []SiteFile

func (s *siteFiles) String() string {
	parts := make([]string, len(*s))
	for i, f := range *s {
		parts[i] = f.Site + "=" + f.Path
	}
	return strings.Join(parts, ",")
}

func (s *siteFiles) Set(v string) error {
	f, err := ParseSiteFile(v)
	if err != nil {
		return err
	}
	*s = append(*s, f)
	return nil
}

// ErrBadSite means a --site value names no site or no file.
var ErrBadSite = errors.New("bad site mapping")

// ParseSiteFile parses NAME=PATH. NAME is taken as a host name is from a
// line (lower case, no port, no trailing dot), and must be one.
func ParseSiteFile(v string) (SiteFile, error) {
	name, path, ok := strings.Cut(v, "=")
	if !ok || path == "" {
		return SiteFile{}, fmt.Errorf("%w: want NAME=PATH, such as blog.example.org=/var/log/nginx/blog.access.log", ErrBadSite)
	}
	site := string(logtally.NormalizeSite(nil, []byte(name)))
	if site == logtally.DefaultSite && !strings.EqualFold(strings.TrimSpace(name), logtally.DefaultSite) {
		return SiteFile{}, fmt.Errorf("%w: %q is not a host name (letters, digits, '.', '-', '_')", ErrBadSite, name)
	}
	return SiteFile{Site: site, Path: path}, nil
}

// siteState is one site's live window and the batch of its lines not yet
// committed. The pipeline's goroutine owns both.
type siteState struct {
	name string
	id   int // index in Pipeline.list, or for a counter in Pipeline.counters
	// counter is set for a named counter's state.
	counter bool
	win     *window.Window
	batch   *tally.Batch
	// inBatch is set while batch holds lines: the site is in
	// Pipeline.touched.
	inBatch bool
	// free are emptied batches for a replay to fill while batch commits
	// (see handOff).
	free []*tally.Batch
}

// siteIndex is what readers see of the sites: replaced, never changed, when
// a site is added.
type siteIndex struct {
	byName map[string]*window.Window
	names  []string // sorted
}

// siteOf returns the site a line of pattern belongs to, given its host
// (normalised) when the site comes from a field; nil host with no field.
// A site first seen once MaxSites are counted is OtherSite.
func (p *Pipeline) siteOf(host []byte) *siteState {
	if s, ok := p.byName[string(host)]; ok {
		return s
	}
	name := string(host)
	if p.named >= p.cfg.MaxSites {
		name = logtally.OtherSite
		if s := p.byName[name]; s != nil {
			return s
		}
	}
	s, err := p.addSite(name)
	if err != nil {
		// A window that cannot be restored: count under the all-sites view
		// alone, and say so once.
		if !p.siteErrLogged {
			p.siteErrLogged = true
			p.log.Error("cannot restore a site's window; its lines count in the all-sites view only", "site", name, "err", err)
		}
		return p.all
	}
	return s
}

// addSite adds a site: its window restored from the store (Deps.NewWindow)
// and an empty batch, and publishes the new index for readers. A site's
// window ends where all's does.
func (p *Pipeline) addSite(name string) (*siteState, error) {
	end := p.now()
	if p.cfg.Anchor == AnchorLog && p.all != nil {
		end = time.Unix(p.all.win.End(), 0) // where the newest line put every window
	}
	win, err := p.siteWindow(name, end)
	if err != nil {
		return nil, fmt.Errorf("site %s: %w", name, err)
	}
	s := &siteState{name: name, id: len(p.list), win: win, batch: tally.NewSiteBatch(name)}
	p.byName[name] = s
	p.list = append(p.list, s)
	if name != logtally.AllSites && name != logtally.OtherSite {
		p.named++
	}
	if name == logtally.OtherSite {
		p.log.Warn("more sites than --max-sites: lines of sites not seen before count under (other)",
			"max_sites", p.cfg.MaxSites, "fix", "raise --max-sites, or map files to sites with --site NAME=PATH")
	}
	idx := &siteIndex{byName: make(map[string]*window.Window, len(p.list))}
	for _, s := range p.list {
		if s.name != logtally.AllSites {
			idx.byName[s.name] = s.win
			idx.names = append(idx.names, s.name)
		}
	}
	slices.Sort(idx.names)
	p.index.Store(idx)
	return s, nil
}

// siteWindow returns a site's window: Deps.NewWindow's, or with
// Config.NoWindow, which counts into no window, a placeholder of one
// second that holds nothing, so that a replay of a thousand sites does not
// restore a thousand windows.
func (p *Pipeline) siteWindow(site string, end time.Time) (*window.Window, error) {
	if p.cfg.NoWindow {
		return window.New(window.Config{Length: time.Second, MaxPaths: 1, MaxVisitors: 1}, end), nil
	}
	return p.newWindow(site, end)
}

// advance moves a site's window to the pipeline's end: the clock's, or
// the newest line's.
func (p *Pipeline) advance(s *siteState, clock time.Time) {
	if p.cfg.Anchor == AnchorClock {
		s.win.Advance(clock)
	} else if p.last != 0 {
		s.win.Advance(time.Unix(p.last, 0))
	}
}

// touch marks s as holding lines for the next commit.
func (p *Pipeline) touch(s *siteState) {
	if !s.inBatch {
		s.inBatch = true
		p.touched = append(p.touched, s)
	}
}

// Multi reports whether the pipeline counts several sites apart.
func (p *Pipeline) Multi() bool { return p.multi }

// Snapshot returns the live window of all sites together: the latest
// snapshot, never waiting.
func (p *Pipeline) Snapshot() *logtally.Snapshot { return p.all.win.Current() }

// Published returns a channel that the next publish of a new Snapshot
// closes (window.Window.Published): what the API's event stream waits on.
func (p *Pipeline) Published() <-chan struct{} { return p.all.win.Published() }

// SiteSnapshot returns one site's live window, and false if the pipeline
// counts no such site. Without sites of their own, DefaultSite is the one.
func (p *Pipeline) SiteSnapshot(name string) (*logtally.Snapshot, bool) {
	w, ok := p.index.Load().byName[name]
	if !ok {
		return nil, false
	}
	return w.Current(), true
}

// Sites returns every site counted with its live window, most page views
// first, then by name.
func (p *Pipeline) Sites() []logtally.SiteCount {
	idx := p.index.Load()
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

// SiteStats is how many sites a pipeline counts, its limit, and how many
// lines went to OtherSite for want of room.
type SiteStats struct {
	Sites      int
	MaxSites   int
	OtherLines int64
}

// SiteStats returns the pipeline's site counts.
func (p *Pipeline) SiteStats() SiteStats {
	return SiteStats{Sites: len(p.index.Load().names), MaxSites: p.cfg.MaxSites, OtherLines: p.otherLines.Load()}
}

// addCounter adds a named counter, counted as a site of its own whose
// paths are the counter's keys (logtally.CounterSite): its window
// restored from the store, as a site's.
func (p *Pipeline) addCounter(name string) error {
	end := p.now()
	if p.cfg.Anchor == AnchorLog {
		end = time.Unix(p.all.win.End(), 0)
	}
	site := logtally.CounterSite(name)
	win, err := p.siteWindow(site, end)
	if err != nil {
		return fmt.Errorf("counter %s: %w", name, err)
	}
	p.counters = append(p.counters, &siteState{name: site, id: len(p.counters), counter: true, win: win, batch: tally.NewSiteBatch(site)})
	p.counterWins[name] = win
	return nil
}

// CounterSnapshot returns a named counter's live window (its keys in
// Pages), and false if no such counter is declared.
func (p *Pipeline) CounterSnapshot(name string) (*logtally.Snapshot, bool) {
	w, ok := p.counterWins[name]
	if !ok {
		return nil, false
	}
	return w.Current(), true
}
