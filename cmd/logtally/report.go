package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/report"
	"github.com/logtally/logtally/storage"
)

// reportLockWait is how long report waits for the database's lock.
const reportLockWait = 2 * time.Second

// reportCmd is `logtally report`: it prints the totals, the days and the
// top pages of a range of days, from the database opened read-only. It
// logs nothing.
type reportCmd struct {
	proc     *process
	Store    storage.Config // the file and the zone of days
	Report   report.Config  // what to report
	Counters counter.Config // a section for each
	// Breakdowns: a section for each of --breakdowns (a report reads what
	// was stored: no --geoip or --own-hosts).
	Breakdowns breakdown.Config
	daemon     daemonSource // where to take a copy of a held database
}

func (c *reportCmd) registerFlags(fs *flag.FlagSet) {
	c.Store.RegisterReadFlags(fs)
	c.Report.RegisterFlags(fs)
	c.Counters.RegisterFlags(fs)
	c.Breakdowns.RegisterReadFlags(fs)
	fs.StringVar(&c.daemon.addr, "daemon", defaultAdminListen,
		"admin `address` of the running logtally that holds --db, which report asks for a consistent copy of it")
	fs.StringVar(&c.daemon.tokenFile, "admin-token-file", "", "`file` holding the token of that logtally's admin listener, if it has one")
}

func (c *reportCmd) check(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("report takes no FILE, got %q: it reads the database (--db)", args)
	}
	return errors.Join(c.Report.Validate(), c.Store.Validate(), c.Counters.Validate(), c.Breakdowns.Validate())
}

// Run prints the report: bbolt lets no other process open the file while
// a running logtally holds it, so it then reports from a consistent copy
// of it that the daemon's admin API writes, and says so.
func (c *reportCmd) Run(ctx context.Context) error {
	store, err := storage.OpenReadOnly(c.Store, reportLockWait)
	closeStore := func() { store.Close() }
	if errors.Is(err, storage.ErrLocked) {
		store, closeStore, err = c.openHeld(ctx, err)
	}
	if errors.Is(err, storage.ErrZone) {
		return fmt.Errorf("%w: a report cannot cut them again in another zone, for days are stored whole: omit --tz to report the days as they are cut", err)
	}
	if err != nil {
		return err
	}
	defer closeStore()
	cfg := c.Report
	src, err := reportSite(store, &cfg.Site)
	if err != nil {
		return err
	}
	counters, err := c.counters(store)
	if err != nil {
		return err
	}
	breakdowns, err := c.breakdowns(store)
	if err != nil {
		return err
	}
	r, err := report.Build(src, cfg, append(counters, breakdowns...)...)
	if err != nil {
		return err
	}
	return r.Write(c.proc.Stdout, cfg.Format)
}

func (*reportCmd) Close() error { return nil }

// reportSite returns the history of the site --site names, and when it
// names none, sets it to the all-sites view if the database holds one,
// else to the one site.
func reportSite(store *storage.Store, site *string) (*storage.Site, error) {
	if *site == "" {
		*site = logtally.DefaultSite
		if _, ok := store.Site(logtally.AllSites); ok {
			*site = logtally.AllSites
		}
	}
	src, ok := store.Site(*site)
	if !ok {
		return nil, fmt.Errorf("--site %s: the database holds no such site; it holds %s", *site, strings.Join(store.Sites(), ", "))
	}
	return src, nil
}

// counters returns the history of each counter to report: the declared
// ones, or without declarations every counter the database holds (a
// counter's history is a site of its own, added when it is first
// counted, by name). A declared counter the database does not hold is an
// error that names those it does.
func (c *reportCmd) counters(store *storage.Store) ([]report.CounterSource, error) {
	var held []string
	for _, site := range store.Sites() {
		if logtally.IsCounterSite(site) {
			held = append(held, strings.TrimPrefix(site, logtally.CounterSite("")))
		}
	}
	var declared []counter.Counter
	if len(c.Counters.Counters) > 0 {
		matcher, err := counter.New(c.Counters)
		if err != nil {
			return nil, err
		}
		declared = matcher.Counters()
	} else {
		for _, name := range held {
			declared = append(declared, counter.Counter{Name: name})
		}
	}
	var counters []report.CounterSource
	for _, ct := range declared {
		st, ok := store.Site(store.Shares(logtally.CounterSite(ct.Name)))
		if !ok {
			return nil, fmt.Errorf("%s: the database holds no counter %s; %s", counterWhere(ct), ct.Name, heldCounters(held))
		}
		counters = append(counters, report.CounterSource{Name: ct.Name, Source: st})
	}
	return counters, nil
}

// counterWhere names where a counter was declared, for an error.
func counterWhere(ct counter.Counter) string {
	if ct.Source == "--counter" || ct.Source == "" {
		return "--counter " + ct.Name
	}
	return ct.Source
}

// heldCounters says which counters a database holds.
func heldCounters(held []string) string {
	if len(held) == 0 {
		return "it holds none (a counter is stored from the first run or replay that declares it)"
	}
	return "it holds " + strings.Join(held, ", ") + " (report without --counter or --counters lists them all)"
}

// breakdowns returns the history of each breakdown of --breakdowns, in
// order; one the database does not hold is an error that names those it
// holds.
func (c *reportCmd) breakdowns(store *storage.Store) ([]report.CounterSource, error) {
	var out []report.CounterSource
	for _, name := range c.Breakdowns.Breakdowns {
		b, _ := breakdown.Parse(strings.ToLower(name))
		st, ok := store.Site(logtally.BreakdownSite(b.String()))
		if !ok {
			return nil, fmt.Errorf("--breakdowns %s: the database holds no breakdown %s; %s", name, b, heldBreakdowns(store))
		}
		counts := "page views"
		if breakdown.PerRequest(b) {
			counts = "requests"
		}
		out = append(out, report.CounterSource{Name: b.String(), Source: st, Breakdown: true, Counts: counts})
	}
	return out, nil
}

// heldBreakdowns says which breakdowns a database holds.
func heldBreakdowns(store *storage.Store) string {
	var held []string
	for _, site := range store.Sites() {
		if logtally.IsBreakdownSite(site) {
			held = append(held, strings.TrimPrefix(site, logtally.BreakdownSite("")))
		}
	}
	if len(held) == 0 {
		return "it holds none (a breakdown is stored from the first run or replay that counts it)"
	}
	return "it holds " + strings.Join(held, ", ")
}
