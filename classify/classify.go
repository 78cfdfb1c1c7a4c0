// Package classify decides what a parsed log line is: a page view or not,
// and whose. Its rules are compiled once, by New, into an immutable
// Classifier that any number of goroutines share; there is no setup step to
// forget, so a Classifier that exists applies the rules it was given.
//
// A page view is a request with one of the page-view methods (GET), a
// status in the page-view range (200-399), a path whose last segment has no
// static-asset extension and that names no feed (/feed/, ?flav=rss20), and
// a user agent that is not a crawler's, a feed reader's or a script's, by
// Crawler-Detect's list (see package crawler) and the operator's own
// (unless crawlers are included, or unless the log format has no user
// agent to tell them by: then every request is taken for a person's).
// Telling an agent costs a microsecond or more, so each goroutine
// remembers the verdicts of the agents it saw lately (Memo), and a line
// whose agent was seen costs a map lookup. A visitor is a
// keyed hash (SipHash-2-4, 128-bit key) of the client address (in one
// spelling: see client), or of the address and the user agent, under the
// key of the line's day (see Keys): the same client is one visitor within
// a day, across restarts and across a fleet's nodes, and another the next
// day, whose key is another; addresses are never stored, and once a day's
// key is destroyed its hashes cannot be tied back to them.
package classify

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"github.com/logtally/logtally/internal/listflag"
	"slices"
	"strconv"
	"strings"

	"github.com/dchest/siphash"
	"github.com/logtally/logtally"
	"github.com/logtally/logtally/parser"
)

// Keys gives the key that a line's visitor is hashed with: the key of the
// day of unix second t (*keyring.Ring). At is called for every page view,
// from any goroutine: it must not allocate once the day's key is known.
type Keys interface {
	At(t int64) (k0, k1 uint64)
}

// Fixed is one key for every day: for tests and benchmarks, whose hashes
// must come out the same every run.
type Fixed struct{ K0, K1 uint64 }

// At returns the key.
func (f Fixed) At(int64) (k0, k1 uint64) { return f.K0, f.K1 }

// Visitor keys accepted by Config.VisitorKey.
const (
	KeyHost   = "host"    // one visitor per client address
	KeyHostUA = "host+ua" // one visitor per client address and user agent
)

// DefaultAssetExts are the path extensions that are static assets, never
// page views.
var DefaultAssetExts = strings.Fields("css js mjs map png jpg jpeg gif svg webp avif ico bmp woff woff2 ttf eot otf mp4 webm mp3 wav pdf zip gz txt xml json")

// Config is the classification rules as the operator gives them.
type Config struct {
	Methods   []string // page views use one of these methods
	MinStatus int      // lowest status that is a page view
	MaxStatus int      // highest status that is a page view
	AssetExts []string // extensions that are never page views, any case
	FeedPaths []string // paths and queries of feeds, never page views: see DefaultFeedPaths
	// BotList is the list of crawlers' agents: ListCrawlerDetect or
	// ListNone. BotTokens are more crawlers' agents, as substrings in
	// any case; PersonTokens are people's, whatever the lists say.
	BotList      string
	BotTokens    []string
	PersonTokens []string
	IncludeBots  bool   // count crawlers' page views too
	VisitorKey   string // KeyHost or KeyHostUA
	// NoUserAgent says that the log format has no user-agent field (as
	// `common`): no line is then taken for a crawler's, since every line
	// would be, for want of an agent. The program sets it from the format.
	NoUserAgent bool
}

// DefaultConfig returns the documented defaults: GET, status 200-399, not
// an asset, not a feed, not a crawler, one visitor per client address.
func DefaultConfig() Config {
	return Config{
		Methods:    []string{"GET"},
		MinStatus:  200,
		MaxStatus:  399,
		AssetExts:  DefaultAssetExts,
		FeedPaths:  DefaultFeedPaths,
		BotList:    ListCrawlerDetect,
		VisitorKey: KeyHost,
	}
}

// RegisterFlags sets r to the defaults and registers the rules' flags on fs.
func (r *Config) RegisterFlags(fs *flag.FlagSet) {
	*r = DefaultConfig()
	fs.Var((*listflag.List)(&r.Methods), "pageview-methods", "comma-separated `list` of request methods that can be page views")
	fs.Var((*statusFlag)(r), "pageview-status", "status codes that can be page views, as `LOW-HIGH`")
	fs.Var((*listflag.List)(&r.AssetExts), "asset-exts", "comma-separated `list` of path extensions of static assets, never page views")
	fs.Var((*listflag.List)(&r.FeedPaths), "feed-paths",
		"comma-separated `list` of the paths of feeds, never page views: a path segment (feed), a last segment's extension (.rss), "+
			"or a query parameter (?feed, ?flav=rss20, ?flav=rss*); empty: feeds are pages")
	fs.StringVar(&r.BotList, "bot-list", r.BotList,
		"`name` of the list of crawlers', feed readers' and scripts' user agents: crawler-detect (built in) or none")
	fs.Var((*listflag.List)(&r.BotTokens), "bot-agents",
		"comma-separated `list` of more user-agent substrings (any case) of crawlers and monitors, besides --bot-list's; an empty or - agent is one too")
	fs.Var((*listflag.List)(&r.PersonTokens), "person-agents",
		"comma-separated `list` of user-agent substrings (any case) of people's agents, whatever --bot-list and --bot-agents say")
	fs.BoolVar(&r.IncludeBots, "include-bots", r.IncludeBots, "count crawlers' page views and visitors too")
	fs.StringVar(&r.VisitorKey, "visitor-key", r.VisitorKey, "what makes a visitor: host or host+ua")
}

// statusFlag is Config's status range as one LOW-HIGH flag.
type statusFlag Config

func (s *statusFlag) String() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", s.MinStatus, s.MaxStatus)
}

func (s *statusFlag) Set(v string) error {
	lo, hi, ok := strings.Cut(v, "-")
	if !ok {
		hi = lo
	}
	var err error
	if s.MinStatus, err = strconv.Atoi(strings.TrimSpace(lo)); err == nil {
		s.MaxStatus, err = strconv.Atoi(strings.TrimSpace(hi))
	}
	if err != nil {
		return fmt.Errorf("status range %q: want LOW-HIGH, e.g. 200-399", v)
	}
	return nil
}

// Validate reports rules that cannot be applied.
func (r *Config) Validate() error {
	var errs []error
	if r.VisitorKey != KeyHost && r.VisitorKey != KeyHostUA {
		errs = append(errs, fmt.Errorf("visitor key %q: want %s or %s", r.VisitorKey, KeyHost, KeyHostUA))
	}
	if len(r.Methods) == 0 {
		errs = append(errs, errors.New("page-view methods: none given"))
	}
	if r.MinStatus < 100 || r.MaxStatus > 599 || r.MinStatus > r.MaxStatus {
		errs = append(errs, fmt.Errorf("page-view status %d-%d: want LOW-HIGH within 100-599", r.MinStatus, r.MaxStatus))
	}
	if _, err := compileFeedRules(r.FeedPaths); err != nil {
		errs = append(errs, err)
	}
	if err := validBotList(r.BotList); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Classifier applies compiled rules. It is immutable, so safe for
// concurrent use.
type Classifier struct {
	methods     []string
	minStatus   int
	maxStatus   int
	includeBots bool // or the format logs no agent to tell crawlers by
	hostUA      bool
	keys        Keys
	exts        map[string]struct{}
	feeds       feedRules
	agents      agentRules
}

// New compiles cfg. keys gives each day's visitor-hash key: it must give a
// day the same key for as long as the day is counted, so that a visitor
// seen before and after a restart is still one visitor.
func New(cfg Config, keys Keys) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Classifier{
		methods:     slices.Clone(cfg.Methods),
		minStatus:   cfg.MinStatus,
		maxStatus:   cfg.MaxStatus,
		includeBots: cfg.IncludeBots || cfg.NoUserAgent,
		hostUA:      cfg.VisitorKey == KeyHostUA,
		keys:        keys,
		exts:        make(map[string]struct{}, len(cfg.AssetExts)),
	}
	for _, e := range cfg.AssetExts {
		r.exts[strings.ToLower(strings.TrimPrefix(e, "."))] = struct{}{}
	}
	r.feeds, _ = compileFeedRules(cfg.FeedPaths) // checked by Validate
	r.agents = newAgentRules(&cfg)
	return r, nil
}

// Classify turns a parsed record into a Hit. It does not allocate but to
// tell whether an agent that holds a crawler pattern's literal is a
// crawler's (see crawler.List.Match); the Hit's Path aliases the record's.
func (r *Classifier) Classify(rec *parser.Record) logtally.Hit { return r.ClassifyWith(rec, nil) }

// ClassifyWith is Classify, with the crawler verdicts memo remembers. It
// allocates only to tell and remember an agent not seen lately.
func (r *Classifier) ClassifyWith(rec *parser.Record, memo *Memo) logtally.Hit {
	h := logtally.Hit{Time: rec.Time.Unix(), Path: rec.Path, Status: rec.Status, Bytes: rec.Bytes}
	h.PageView = r.method(rec.Method) &&
		rec.Status >= r.minStatus && rec.Status <= r.maxStatus &&
		!r.asset(rec.Path) && !r.feeds.feed(rec.Path, rec.Query) &&
		(r.includeBots || !r.botMemo(rec.UserAgent, memo))
	if h.PageView {
		h.Visitor = r.Visitor(rec)
	}
	return h
}

// Visitor returns the visitor hash of a record, whether or not it is a
// page view: the visitor of a line a named counter counts. It does not
// allocate.
//
// With the user agent, it is the hash of the address's hash and the
// agent's (under a key told apart by its last bit), so that neither is
// copied and an agent of any length costs one pass.
func (r *Classifier) Visitor(rec *parser.Record) uint64 {
	k0, k1 := r.keys.At(rec.Time.Unix())
	var buf clientBuf
	v := siphash.Hash(k0, k1, client(rec.Host, &buf))
	if !r.hostUA {
		return v
	}
	var pair [16]byte
	binary.LittleEndian.PutUint64(pair[:8], v)
	binary.LittleEndian.PutUint64(pair[8:], siphash.Hash(k0, k1^1, rec.UserAgent))
	return siphash.Hash(k0, k1, pair[:])
}

func (r *Classifier) method(m []byte) bool {
	for _, want := range r.methods {
		if string(m) == want {
			return true
		}
	}
	return false
}

// asset reports whether the last path segment has an asset extension.
func (r *Classifier) asset(path []byte) bool {
	dot := -1
	for i := len(path) - 1; i >= 0 && path[i] != '/'; i-- {
		if path[i] == '.' {
			dot = i
			break
		}
	}
	var buf [16]byte // longer extensions are never assets
	if dot < 0 || len(path)-dot-1 > len(buf) {
		return false
	}
	ext := buf[:0]
	for _, c := range path[dot+1:] {
		ext = append(ext, lower(c))
	}
	_, ok := r.exts[string(ext)]
	return ok
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
