// Package api serves logtally's JSON API.
//
// The hot endpoints answer from the window's last published snapshot, so a
// request never waits on ingest and costs the same however fast lines come
// in; the event stream is woken by each publish. The endpoints that answer
// for this node or for the fleet are written once, against a source that
// either is. Every error, including unknown paths and wrong methods, is an
// *Error that one writer turns into its status and a JSON body; internals
// never leak into it.
package api

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/logtally/logtally"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the API's operator settings.
type Config struct {
	CacheMaxAge time.Duration // Cache-Control max-age of the live endpoints; 0 for no-cache
	CORSOrigins []string      // origins allowed to read the public listener from a browser; "*" for any
	Dashboard   bool          // serve the dashboard page at /
	MaxStreams  int           // most event streams open at once; 0 turns /api/v1/events off
	// StreamSendTimeout is how long one event may take to reach a client
	// before the client is dropped.
	StreamSendTimeout time.Duration
	// MaxHeavy is the most heavy history queries answered at once (see
	// HeavyReads); more get 429. 0 takes DefaultMaxHeavy.
	MaxHeavy int
	// AdminToken, if set, is required of every request to the admin
	// listener (see Listener). It is no flag: the program reads it from
	// --admin-token-file, so that it shows in no process list.
	AdminToken string
}

// DefaultConfig returns the defaults: the live endpoints may be reused for
// 5 seconds, no other origin may read the API, no admin token, the dashboard is served,
// up to 1,000 event streams, and 4 heavy history queries at once.
func DefaultConfig() Config {
	return Config{CacheMaxAge: 5 * time.Second, Dashboard: true, MaxStreams: DefaultMaxStreams,
		StreamSendTimeout: DefaultStreamSendTimeout, MaxHeavy: DefaultMaxHeavy}
}

// RegisterFlags sets c to the defaults and registers the API's flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.DurationVar(&c.CacheMaxAge, "cache-max-age", c.CacheMaxAge,
		"Cache-Control max-age of /api/v1/stats and /api/v1/pages (0 for no-cache)")
	fs.Func("cors-origin", "`origin` allowed to read the public listener's API from a browser (repeat, or comma-separated; * for any); needs --public-listen",
		func(v string) error {
			for _, o := range strings.Split(v, ",") {
				if o = strings.TrimSpace(o); o != "" {
					c.CORSOrigins = append(c.CORSOrigins, o)
				}
			}
			return nil
		})
	fs.BoolVar(&c.Dashboard, "dashboard", c.Dashboard, "serve the dashboard page at / (--dashboard=false turns it off)")
	fs.IntVar(&c.MaxStreams, "max-streams", c.MaxStreams,
		"most clients of the live event stream /api/v1/events at once; more get 503 (0 turns the stream off)")
	fs.IntVar(&c.MaxHeavy, "max-heavy-queries", c.MaxHeavy,
		"most heavy history queries (more than 6 hours of minutes) answered at once; more get 429")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	if c.CacheMaxAge < 0 {
		return fmt.Errorf("cache max age %s: must not be negative", c.CacheMaxAge)
	}
	if c.MaxStreams < 0 {
		return fmt.Errorf("max streams %d: must not be negative", c.MaxStreams)
	}
	if c.MaxHeavy < 0 {
		return fmt.Errorf("max heavy queries %d: must not be negative", c.MaxHeavy)
	}
	return nil
}

// Deps are what the API reads: small interfaces, so that it can answer
// from any store that gives the same answers.
type Deps struct {
	// Snapshot returns the window's latest snapshot; it must not block.
	Snapshot func() *logtally.Snapshot
	// History answers the history endpoints; nil disables them.
	History History
	// Ready reports why the daemon cannot make progress (for example, the
	// store is not writable), or nil when it can; always ready if nil.
	Ready func() error
	// Status reports the daemon's state for /api/v1/status; nil answers 404.
	Status func() Status
	// Metrics, if set, is served at /metrics, and API requests are counted
	// in it by route and status.
	Metrics *prometheus.Registry
	Now     func() time.Time // for "today"; time.Now if nil
	// Zone is the zone of the store's days: a plain date in from or to is a
	// day there. UTC if nil.
	Zone   *time.Location
	Logger *slog.Logger // discards if nil
	// Published returns a channel that the next publish of Snapshot
	// closes (window.Window.Published): the event stream waits on it. With
	// none, a stream gets the snapshot of when it opened, and heartbeats.
	Published func() <-chan struct{}
	// Fleet, in fleet mode, is what the API answers from by default; nil
	// without fleet mode. See Fleet.
	Fleet *Fleet
	// Sites, with several sites, answers ?site= and /api/v1/sites; then
	// Snapshot and History are of all sites together. See Sites.
	Sites Sites
	// Counters, when counters are declared, answers /api/v1/counters,
	// /api/v1/ratios and /api/v1/series?counter=; nil answers 404 there.
	Counters Counters
	// Breakdowns answers /api/v1/breakdowns; nil answers 404 there.
	Breakdowns Breakdowns
	// Backup, with DB (the database file's absolute path), answers
	// /api/v1/backup on the admin listener; nil: no such route.
	Backup Backup
	DB     string
}

// History is the stored data the history endpoints read: a storage.Store,
// or any store that answers the same.
type History interface {
	Series(from, to time.Time, step time.Duration) (logtally.Series, error)
	PathCounts(paths []string, day time.Time) ([]logtally.PathCount, error)
}

// PageHistory is what GET /api/v1/pages?from=T&to=T reads: the top pages
// of any range. A History that also implements it answers that endpoint;
// with one that does not, it answers 404.
type PageHistory interface {
	Pages(from, to time.Time, limit int) (logtally.PageRange, error)
}

// Server is the API's HTTP handler: the admin listener's, and through
// Handler the public one's, which share their streams, caches and caps.
type Server struct {
	cfg           Config
	deps          Deps
	admin, public http.Handler // each listener's chain (see routes)
	table         []Route      // the endpoints, as Routes lists them
	token         *tokenSum    // the admin token's; nil when none is set
	cacheControl  []string
	metrics       *requestMetrics // nil without Deps.Metrics
	streams       *streams        // nil when the event stream is off
	heavy         *heavy          // caps the heavy history queries

	own   part      // all the daemon counts
	sites siteParts // the parts of ?site=
}

// New returns the API handler.
func New(cfg Config, deps Deps) *Server {
	deps = deps.withDefaults()
	if cfg.StreamSendTimeout <= 0 {
		cfg.StreamSendTimeout = DefaultStreamSendTimeout
	}
	if cfg.MaxHeavy <= 0 {
		cfg.MaxHeavy = DefaultMaxHeavy
	}
	s := &Server{cfg: cfg, deps: deps, token: newTokenSum(cfg.AdminToken), cacheControl: []string{"no-cache"},
		own: part{node: &nodeSource{snapshot: deps.Snapshot, hist: deps.History}}}
	if age := int(cfg.CacheMaxAge / time.Second); age > 0 {
		s.cacheControl = []string{"public, max-age=" + strconv.Itoa(age)}
	}
	if deps.Fleet != nil {
		s.own.fleet = &fleetSource{fleet: deps.Fleet}
	}
	s.heavy = newHeavy(cfg.MaxHeavy, deps.Logger, deps.Metrics)
	if cfg.MaxStreams > 0 {
		s.streams = newStreams(cfg.MaxStreams, s.liveSnapshot, s.published, func() {
			if c := s.live(); c != nil {
				c.eventBody(DefaultPagesLimit)
			}
		})
	}
	s.routes()
	return s
}

// withDefaults returns d with its optional fields that are nil set to
// their defaults.
func (d Deps) withDefaults() Deps {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Zone == nil {
		d.Zone = time.UTC
	}
	if d.Ready == nil {
		d.Ready = func() error { return nil }
	}
	return d
}
