// Package status is what the daemon tells its operators about itself: the
// body of /api/v1/status, whether it is ready, and the Prometheus registry
// behind /metrics.
//
// It is the one package that sees the pipeline, the tailer and the API's
// types at once, so that none of them has to know another: each owner
// reports what it keeps (the live loop is a prometheus.Collector of its
// own counters and windows), and a Report only gathers. Every figure is read when it is
// asked for, from counters kept anyway, so reporting costs nothing per line.
package status

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/fleet"
	"github.com/logtally/logtally/ingest/live"
	"github.com/logtally/logtally/tailer"
)

// Config is what a Report says of the process itself.
type Config struct {
	Version string    // the program's version
	Commit  string    // the commit it was built from
	Started time.Time // when the program started
	DB      string    // the database file
	// RequireFiles makes a followed path or glob that matches no file a
	// readiness failure; a file that cannot be read always is one.
	RequireFiles bool
}

// Deps are what a Report reads.
type Deps struct {
	// Pipeline is the live loop: its figures, and its metrics as a
	// prometheus.Collector.
	Pipeline *live.Loop
	// Files returns the followed files; nil when none are followed.
	Files func() []tailer.FileStatus
	// Following returns why following files stopped, or nil while it goes
	// on; nil when none are followed.
	Following func() error
	// Now is the clock the uptime is measured on; time.Now if nil.
	Now func() time.Time
	// StoreFile reports why the database file can no longer be used (it
	// was deleted or replaced while open), or nil; nil when not checked.
	StoreFile func() error
	// StoreDamage returns what is known to be damaged in the database
	// file, and how to recover; no problems while nothing is. nil: not
	// known.
	StoreDamage func() (problems []string, recover string)
	// Fleet returns fleet mode's figures (fleet.Node.Stats); nil without
	// fleet mode.
	Fleet func() fleet.NodeStats
}

// Report gathers the daemon's state for its operators.
type Report struct {
	cfg      Config
	deps     Deps
	registry *prometheus.Registry
}

// New returns a report on the daemon deps describe. Its registry holds the
// Go runtime's and the process's metrics, the pipeline's, and the lag of
// each followed file.
func New(cfg Config, deps Deps) *Report {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	r := &Report{cfg: cfg, deps: deps, registry: prometheus.NewRegistry()}
	r.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		deps.Pipeline,
		fileCollector{deps.Files},
		storeFileCollector{deps.StoreFile},
		buildInfo(cfg),
	)
	if deps.Fleet != nil {
		r.registry.MustRegister(fleetCollector{deps.Fleet, deps.Now})
	}
	return r
}

// buildInfo is logtally_build_info: always 1, with the build in its
// labels, so that a query can join any figure with the version that made
// it, and a dashboard can show which versions run.
func buildInfo(cfg Config) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "logtally_build_info",
		Help:        "Always 1: the version, commit and Go version logtally was built with, in its labels.",
		ConstLabels: prometheus.Labels{"version": cfg.Version, "commit": cfg.Commit, "goversion": runtime.Version()}})
	g.Set(1)
	return g
}

// Registry returns the registry behind /metrics.
func (r *Report) Registry() *prometheus.Registry { return r.registry }

// Ready reports why the daemon cannot make progress: commits failing,
// following stopped, a followed file that cannot be read.
func (r *Report) Ready() error {
	if err := r.deps.Pipeline.Err(); errors.Is(err, logtally.ErrOutboxFull) {
		return fmt.Errorf("reading paused until the fleet database takes the waiting batches: %w", err)
	} else if err != nil {
		return fmt.Errorf("store not writable: %w", err)
	}
	if r.deps.StoreFile != nil {
		if err := r.deps.StoreFile(); err != nil {
			return err
		}
	}
	if r.deps.Following != nil {
		if err := r.deps.Following(); err != nil {
			return fmt.Errorf("following stopped: %w", err)
		}
	}
	if r.deps.Files != nil {
		for _, f := range r.deps.Files() {
			switch {
			case f.State == tailer.Unreadable:
				// A file that is there and cannot be read loses its lines
				// until someone acts, as a path given alone would have
				// been refused at start: it is no log yet to appear.
				return fmt.Errorf("cannot read %s: %s", f.Path, f.Error)
			case f.State == tailer.Missing && r.cfg.RequireFiles:
				return fmt.Errorf("no file matches %s (--require-files)", f.Path)
			}
		}
	}
	return nil
}

// Status returns the body of /api/v1/status.
func (r *Report) Status() api.Status {
	p := r.deps.Pipeline
	st := api.Status{
		Version: r.cfg.Version, Started: r.cfg.Started.UTC(), UptimeSeconds: r.deps.Now().Sub(r.cfg.Started).Seconds(),
		Lines: api.LineStatus{Read: p.Lines(), Parsed: p.Parsed(), Rejected: p.Rejected(),
			ByReason: p.RejectedBy(), BytesRead: p.BytesRead()},
		Store: api.StoreStatus{Path: r.cfg.DB, State: "ok", Commits: p.Commits(), LastCommit: p.LastCommit().UTC()},
	}
	if err := p.Err(); err != nil {
		st.Store.State, st.Store.Error = "failing", err.Error()
	} else if r.deps.StoreFile != nil {
		if err := r.deps.StoreFile(); err != nil {
			st.Store.State, st.Store.Error = "failing", err.Error()
		}
	}
	if r.deps.StoreDamage != nil {
		if problems, recover := r.deps.StoreDamage(); len(problems) > 0 {
			st.Store.Damage, st.Store.Recover = problems, recover
			if st.Store.State == "ok" {
				st.Store.State = "damaged"
			}
		}
	}
	if r.deps.Files != nil {
		for _, f := range r.deps.Files() {
			st.Files = append(st.Files, api.FileStatus{Path: f.Path, Fingerprint: f.Fingerprint, Offset: f.Offset,
				Size: f.Size, LagBytes: lag(f), State: f.State, Error: f.Error})
		}
	}
	for _, s := range p.Samples() {
		st.Samples = append(st.Samples, api.RejectedSample{Time: s.Time.UTC(), Reason: s.Reason, Line: s.Line})
	}
	if p.Multi() {
		ss := p.SiteStats()
		st.Sites = &api.SitesStatus{Counted: ss.Sites, MaxSites: ss.MaxSites, OtherLines: ss.OtherLines}
	}
	if r.deps.Fleet != nil {
		st.Fleet = fleetStatus(r.deps.Fleet(), r.deps.Now())
	}
	return st
}

// lag is how many bytes of a file are written and not read yet.
func lag(f tailer.FileStatus) int64 { return max(f.Size-f.Offset, 0) }

var (
	lagDesc = prometheus.NewDesc("logtally_file_lag_bytes", "Bytes written to a followed file and not read yet.",
		[]string{"path"}, nil)
	missingDesc = prometheus.NewDesc("logtally_file_missing",
		"1 for each followed path or glob that matches no file: nothing is read from it.", []string{"path"}, nil)
	unreadableDesc = prometheus.NewDesc("logtally_file_unreadable",
		"1 for each matched file that cannot be opened (permissions): nothing is read from it.", []string{"path"}, nil)
)

// fileCollector reports the lag of each followed file, and the paths that
// nothing is read from.
type fileCollector struct{ files func() []tailer.FileStatus }

func (c fileCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- missingDesc
	ch <- unreadableDesc
}

func (c fileCollector) Collect(ch chan<- prometheus.Metric) {
	if c.files == nil {
		return
	}
	for _, f := range c.files() {
		switch f.State {
		case tailer.Missing:
			ch <- prometheus.MustNewConstMetric(missingDesc, prometheus.GaugeValue, 1, f.Path)
		case tailer.Unreadable:
			ch <- prometheus.MustNewConstMetric(unreadableDesc, prometheus.GaugeValue, 1, f.Path)
		default:
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(lag(f)), f.Path)
		}
	}
}

var storeFileGoneDesc = prometheus.NewDesc("logtally_store_file_gone",
	"1 when the database file was deleted or replaced while open: what is committed to it is lost when logtally stops.",
	nil, nil)

// storeFileCollector reports whether the database file is still where it
// was opened.
type storeFileCollector struct{ err func() error }

func (c storeFileCollector) Describe(ch chan<- *prometheus.Desc) { ch <- storeFileGoneDesc }

func (c storeFileCollector) Collect(ch chan<- prometheus.Metric) {
	if c.err == nil {
		return
	}
	gone := 0.0
	if c.err() != nil {
		gone = 1
	}
	ch <- prometheus.MustNewConstMetric(storeFileGoneDesc, prometheus.GaugeValue, gone)
}
