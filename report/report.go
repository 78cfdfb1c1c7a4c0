// Package report sums up a range of days of stored history, as `logtally
// report` prints it: the totals, one row per day (requests, page views,
// visitors, status classes, bytes) and the top pages.
//
// The one idea: a Report is built once from a small read-only Source (a
// storage.Store opened read-only) and every format, the aligned table, JSON
// and CSV, renders that one value, so the three cannot disagree. Days come
// whole from the daily records and the per-day page counts, so the pages of
// a report are exact for every path a day kept.
package report

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/logtally/logtally"
)

// Formats of a report.
const (
	Table = "table"
	JSON  = "json"
	CSV   = "csv"
)

// DefaultDays is how many days a report covers when --from is not given:
// the last days held, ending with the newest line's day, and starting no
// earlier than the first day with a line.
const DefaultDays = 7

// ErrEmpty means the store holds no history to report on.
var ErrEmpty = errors.New("the database holds no history yet: replay or run logtally first")

// Config is what a report covers and how it is written.
type Config struct {
	From, To string // days, as 2006-01-02 in the store's zone; empty: see DefaultDays
	Site     string // the site reported on; empty: every site together (the program picks the store's view)
	Format   string // Table, JSON or CSV
	Pages    int    // top pages listed
}

// DefaultConfig returns the defaults: a table of the last DefaultDays
// days with their top 10 pages.
func DefaultConfig() Config { return Config{Format: Table, Pages: 10} }

// RegisterFlags sets c to the defaults and registers its flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.StringVar(&c.From, "from", "", "first `day` of the report, such as 2015-05-17 (default: 6 days before --to, or the first day held if later)")
	fs.StringVar(&c.To, "to", "", "last `day` of the report (default: the day of the newest line stored)")
	fs.StringVar(&c.Site, "site", c.Site, "`site` to report on, as /api/v1/sites names it (default: every site together)")
	fs.IntVar(&c.Pages, "pages", c.Pages, "how many of the top pages to list")
	fs.BoolFunc("json", "write JSON instead of a table", func(string) error { c.Format = JSON; return nil })
	fs.BoolFunc("csv", "write CSV instead of a table", func(string) error { c.Format = CSV; return nil })
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	var errs []error
	for _, d := range []struct{ flag, v string }{{"--from", c.From}, {"--to", c.To}} {
		if _, err := time.Parse(time.DateOnly, d.v); d.v != "" && err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want a day such as 2015-05-17", d.flag, d.v))
		}
	}
	if c.Site != "" && !logtally.ValidSite(c.Site) {
		errs = append(errs, fmt.Errorf("--site %q: not a site name (lower case, no port), such as blog.example.org", c.Site))
	}
	if c.Format != Table && c.Format != JSON && c.Format != CSV {
		errs = append(errs, fmt.Errorf("format %q: want %s, %s or %s", c.Format, Table, JSON, CSV))
	}
	if c.Pages < 1 || c.Pages > logtally.MaxPages {
		errs = append(errs, fmt.Errorf("--pages %d: want 1 to %d", c.Pages, logtally.MaxPages))
	}
	return errors.Join(errs...)
}

// Source is the stored history a report reads: *storage.Store.
type Source interface {
	// Newest returns the start of the minute of the newest line stored.
	Newest() (t time.Time, ok bool, err error)
	// Series returns one point per day (step 24h) from the day of from
	// to the day of to, and from which day they are kept.
	Series(from, to time.Time, step time.Duration) (logtally.Series, error)
	// Totals returns the counts of the days from the day of from to the
	// day of to, their visitors the sum of the days'.
	Totals(from, to time.Time) (logtally.Counts, error)
	// Pages returns the top pages of [from, to].
	Pages(from, to time.Time, limit int) (logtally.PageRange, error)
	// Location returns the zone the store's days follow.
	Location() *time.Location
}

// Report is a range of days of history.
type Report struct {
	From, To time.Time // the first and the last day, at their start
	Zone     string
	Site     string
	Total    Row
	Days     []Day
	Pages    []logtally.PageCount
	// PagesExact is set when the pages' counts are exact: every path each
	// day kept (see storage's per-day path caps), all days held.
	PagesExact bool
	// KeptFrom, unless zero, is the first day whose daily counts are held:
	// days before it count in no row and not in the total.
	KeptFrom time.Time
	// PagesKeptFrom, unless zero, is the first day whose page counts are
	// held (they are kept as long as hours): pages before it are not
	// counted.
	PagesKeptFrom time.Time
	// Counters are the named counters' sections, in declaration order.
	Counters []Counter
	// Breakdowns are the breakdowns' sections, in the order of
	// --breakdowns: a Counter each, whose lines are the page views (or for
	// status and not-found, the requests) it counted, and whose visitors
	// are not kept (0): a breakdown's history keeps its keys' counts.
	Breakdowns []Counter
}

// Counter is a named counter's section of a report: the lines it counted
// over the report's days, their visitors, and its top keys.
type Counter struct {
	Name     string
	Lines    int64
	Visitors int64 // the sum of the days' visitors, estimated as a day's are
	Keys     []logtally.PageCount
	Exact    bool   // the keys' counts are exact: see Report.PagesExact
	Counts   string // of a breakdown: CounterSource.Counts
}

// CounterSource is a named counter's stored history, as a Source: its
// paths are the counter's keys. With Breakdown, it is a breakdown's, whose
// section is among Report.Breakdowns.
type CounterSource struct {
	Name string
	Source
	Breakdown bool
	// Counts, of a breakdown, names what it counts: "page views" or
	// "requests".
	Counts string
}

// Row is the counts of a day, or of the whole report.
type Row struct {
	Held bool // false for a day the retention no longer holds (or never held)
	// Damaged is set for a day whose stored counts could not be read, the
	// database file damaged there: it has none, and the total lacks it.
	Damaged   bool
	Requests  int64
	PageViews int64
	// Visitors are a day's distinct visitors, estimated from HyperLogLog
	// sketches; in the total, the sum of the days'.
	Visitors int64
	Status   [5]int64
	Bytes    int64
}

// Day is one day of a report.
type Day struct {
	Date time.Time
	Row
}

// Build reads the report that cfg asks for from src, with a section for
// each of counters over the same days.
func Build(src Source, cfg Config, counters ...CounterSource) (*Report, error) {
	loc := src.Location()
	from, to, err := days(src, cfg, loc)
	if err != nil {
		return nil, err
	}
	end := to.AddDate(0, 0, 1).Add(-time.Second)
	r := &Report{From: from, To: to, Zone: zoneName(loc, to), Site: cfg.Site}
	// Without --from, the days before the first day held are left out.
	if err := r.readDays(src, from, end, cfg.From == ""); err != nil {
		return nil, err
	}
	pages, err := src.Pages(from, end, cfg.Pages)
	if err != nil {
		return nil, err
	}
	r.Pages, r.PagesExact, r.PagesKeptFrom = pages.Pages, pages.Exact, pages.KeptFrom
	for _, c := range counters {
		if err := r.readCounter(c, from, end, cfg.Pages); err != nil {
			if c.Breakdown {
				return nil, fmt.Errorf("breakdown %s: %w", c.Name, err)
			}
			return nil, fmt.Errorf("counter %s: %w", c.Name, err)
		}
	}
	return r, nil
}

// zoneName names the zone of a report's days: the machine's zone by the
// name it has on the day to.
func zoneName(loc *time.Location, to time.Time) string {
	if loc == time.Local {
		zone, _ := to.Zone()
		return zone
	}
	return loc.String()
}

// readDays reads the rows of the days from the day of from to the day of
// end, and their total; with trim, the days before the first that holds a
// line are left out, and the report starts at that day.
func (r *Report) readDays(src Source, from, end time.Time, trim bool) error {
	series, err := src.Series(from, end, 24*time.Hour)
	if err != nil {
		return err
	}
	total, err := src.Totals(from, end)
	if err != nil {
		return err
	}
	r.KeptFrom = series.KeptFrom
	r.Total = Row{Held: true, Requests: total.Requests, PageViews: total.PageViews, Visitors: total.Visitors,
		Status: total.Status, Bytes: total.Bytes}
	points := series.Points
	for trim && len(points) > 1 && points[0].Requests == 0 && series.KeptFrom.IsZero() {
		points = points[1:] // before the first day held
	}
	loc := src.Location()
	r.From = points[0].Time.In(loc)
	for _, p := range points {
		held := series.KeptFrom.IsZero() || !p.Time.Before(series.KeptFrom)
		r.Days = append(r.Days, Day{Date: p.Time.In(loc), Row: Row{Held: held, Damaged: p.Damaged, Requests: p.Requests,
			PageViews: p.PageViews, Visitors: p.Visitors, Status: p.Status, Bytes: p.Bytes}})
	}
	return nil
}

// readCounter adds a named counter's section over the days from the day
// of from to the day of end, with its top keys (at most limit).
func (r *Report) readCounter(c CounterSource, from, end time.Time, limit int) error {
	total, err := c.Totals(from, end)
	if err != nil {
		return err
	}
	keys, err := c.Pages(from, end, limit)
	if err != nil {
		return err
	}
	sec := Counter{Name: c.Name, Lines: total.Requests, Visitors: total.Visitors, Keys: keys.Pages, Exact: keys.Exact}
	if c.Breakdown {
		sec.Visitors, sec.Counts = 0, c.Counts
		r.Breakdowns = append(r.Breakdowns, sec)
		return nil
	}
	r.Counters = append(r.Counters, sec)
	return nil
}

// days returns the first and the last day of the report, at their start.
func days(src Source, cfg Config, loc *time.Location) (from, to time.Time, err error) {
	if cfg.To != "" {
		if to, err = time.ParseInLocation(time.DateOnly, cfg.To, loc); err != nil {
			return from, to, fmt.Errorf("--to %q: want a day such as 2015-05-17", cfg.To)
		}
	} else {
		newest, ok, err := src.Newest()
		if err != nil {
			return from, to, err
		}
		if !ok {
			return from, to, ErrEmpty
		}
		y, m, d := newest.In(loc).Date()
		to = time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	from = to.AddDate(0, 0, -(DefaultDays - 1))
	if cfg.From != "" {
		if from, err = time.ParseInLocation(time.DateOnly, cfg.From, loc); err != nil {
			return from, to, fmt.Errorf("--from %q: want a day such as 2015-05-17", cfg.From)
		}
	}
	if from.After(to) {
		return from, to, fmt.Errorf("--from %s is after --to %s", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	if to.Sub(from) > logtally.MaxPoints*24*time.Hour {
		return from, to, fmt.Errorf("%s to %s: more than %d days", from.Format(time.DateOnly), to.Format(time.DateOnly), logtally.MaxPoints)
	}
	return from, to, nil
}
