// Package logtally holds the domain types that cross logtally's packages: a
// classified hit, the batch of deltas one commit carries, a snapshot of the
// live window, a stored bucket of counts, a series point and a page count.
//
// The one idea: every package speaks these plain types and nothing else of
// the others. The parser and classifier produce Hits; the window consumes
// Hits and publishes Snapshots; storage commits Batches and answers with
// Buckets, Series and PathCounts; the API reads Snapshots and a small
// history interface. So a store can be swapped (bbolt today, a fleet
// database tomorrow) without the API or the window knowing, and this
// package imports nothing of logtally's own.
package logtally

import (
	"crypto/sha256"
	"errors"
	"time"
)

// Hit is one log line after parsing and classification: what the window and
// a Batch need of it.
type Hit struct {
	Time    int64  // unix seconds, UTC, from the log line
	Visitor uint64 // salted hash of the visitor key; set only for page views
	Path    []byte // request path without query; aliases the line it came from
	Bytes   int64  // response bytes sent
	Status  int    // HTTP status
	// PageView is set when the request counts as a page view under the
	// classification rules.
	PageView bool
}

// PageCount is one path's page views.
type PageCount struct {
	Path      string `json:"path"`
	PageViews int64  `json:"pageviews"`
	// Visitors is the path's distinct visitors, where they are counted
	// per path: a named counter's window, whose paths are keys.
	Visitors int64 `json:"visitors,omitempty"`
}

// PathCount is a path's stored page views on one day and in all.
type PathCount struct {
	Path  string
	Day   int64 // page views on the day asked for
	Total int64 // all-time page views
	// Damaged is set when a stored count of the path could not be read,
	// its file damaged there: Day and Total lack it.
	Damaged bool
}

// OtherPath is the path under which page views are counted once a per-path
// cap is reached.
const OtherPath = "(other)"

// Snapshot is an immutable view of the live window at one moment. Readers
// share it without locks: whoever publishes it never changes it again.
type Snapshot struct {
	From      time.Time // start of the window: its first second
	To        time.Time // end of the window: just after its last second
	Length    time.Duration
	Requests  int64
	PageViews int64
	Visitors  int64
	// Approximate is set when Visitors is an estimate, because the window
	// holds more distinct visitors than it counts exactly.
	Approximate bool
	Rejected    int64       // lines rejected in the window: unparsable, or too far in the future
	Pages       []PageCount // top pages, most viewed first, then by path
	// PageVisitorsApproximate is set when the Visitors of Pages (a named
	// counter's visitors per key) are lower bounds: the window holds more
	// pairs of key and visitor than it keeps.
	PageVisitorsApproximate bool
}

// PathViews returns a path's page views in the snapshot, and whether the
// path is among the snapshot's pages.
func (s *Snapshot) PathViews(path string) (int64, bool) {
	for _, p := range s.Pages {
		if p.Path == path {
			return p.PageViews, true
		}
	}
	return 0, false
}

// View is the live window and the recent history of a whole fleet of
// nodes, as one read of the fleet database saw them: what a node in fleet
// mode serves without waiting on that database. It is never changed once
// published, so readers share it.
type View struct {
	// AsOf is when the read began, by the fleet database's clock (where
	// the live window ends, alike for every node): the counts are at most
	// this old, plus what nodes have not shipped yet.
	AsOf   time.Time
	Window Snapshot
	Series Series // the last hour up to AsOf, by minute
}

// OutboxEntry is one committed batch waiting in a node's outbox to be
// shipped to the fleet database: written by the store in the commit's own
// transaction, read and deleted by the fleet's shipper.
type OutboxEntry struct {
	Seq       uint64    // its number: one more than the batch committed before it
	Committed time.Time // when it was committed
	Batch     []byte    // the batch's encoding (Batch.MarshalBinary); the entry's own copy
}

// EntrySum is a checksum of an outbox entry: the first 16 bytes of the
// SHA-256 of its batch's encoding. The fleet keeps the sum of each node's
// last batch applied, and each batch names its predecessor's, so that a
// node whose database holds another batch under a number than the one the
// fleet applied (restored from a backup, copied to another machine) is
// told apart from one that only missed an acknowledgement.
type EntrySum [16]byte

// Sum returns the entry's checksum.
func (e OutboxEntry) Sum() EntrySum {
	h := sha256.Sum256(e.Batch)
	return EntrySum(h[:16])
}

// OutboxStats is how much waits in a node's outbox.
type OutboxStats struct {
	Entries int64
	Bytes   int64
	Oldest  time.Time // commit time of the oldest entry; zero when empty
	LastSeq uint64    // the number of the last batch written, shipped or not; 0 if none
}

// ErrOutboxFull means a node's outbox holds as many batches as it may
// (--fleet-max-outbox): a commit that would add one more fails, so reading
// pauses, the log keeping the lines, until the fleet database takes some.
var ErrOutboxFull = errors.New("fleet outbox full")

// Counts is what is stored for one minute, hour or day.
type Counts struct {
	Requests  int64
	PageViews int64
	// Visitors is the number of distinct visitors with a page view. It is
	// exact for a minute unless Approximate; for hours and days it is
	// always estimated from a merged sketch.
	Visitors    int64
	Approximate bool
	Status      [5]int64 // requests by status class: 1xx, 2xx, 3xx, 4xx, 5xx
	Bytes       int64    // response bytes sent
	Rejected    int64    // lines that did not parse, counted at the time of the line before them
	Top         []PageCount
	Other       int64 // page views of paths not in Top
}

// Bucket is the stored counts of one minute, hour or day.
type Bucket struct {
	Time time.Time // start of the bucket: UTC for minutes and hours, the store's zone for days
	Counts
}

// Kept counts the lines (parsed requests) a store counted in each
// resolution of its history. A line older than a resolution's retention
// when it arrives still counts in the coarser ones.
type Kept struct {
	Minutes, Hours, Days int64
}

// Second is the live window's state of one second, as a commit checkpoints
// it: enough to put the second back into a window after a restart.
type Second struct {
	Time      int64 // unix second
	Requests  int64
	PageViews int64
	Visitors  []uint64 // sorted, distinct
	Paths     map[string]int64
	// PathVisitors, for a named counter's site, is each path's visitors
	// in the second: what restores its distinct visitors per key.
	PathVisitors map[string][]uint64
}

// Point is one step of a series.
type Point struct {
	Time      time.Time
	Requests  int64
	PageViews int64
	Visitors  int64
	Status    [5]int64 // requests by status class: 1xx, 2xx, 3xx, 4xx, 5xx
	Bytes     int64    // response bytes sent
	// Damaged is set when a record of the step could not be read, its
	// file damaged there: the counts lack it, and are not the step's.
	Damaged bool
}

// ErrDamaged means the database file is damaged: what was asked for needs
// a part of it that cannot be read as it was written. A store says what is
// damaged in the error, and answers what it can around a damaged record
// (see Series.Damaged).
var ErrDamaged = errors.New("database file is damaged")

// Series is the answer to a history query.
type Series struct {
	Step        time.Duration
	Approximate bool // some point's visitors are estimated
	Points      []Point
	// KeptFrom, unless zero, is the start of the first step the store holds
	// whole under its retention: a point before it is not a count of zero
	// but a step whose history was pruned or never kept.
	KeptFrom time.Time
	// Damaged says which stored records the answer lacks because the file
	// is damaged there; their points are marked Damaged.
	Damaged []string
}

// PageRange is the top pages of a range of history.
type PageRange struct {
	Pages []PageCount // most viewed first, then by path
	// Other is the page views of the range that no path holds: a minute
	// keeps its top pages and counts the rest as one number.
	Other int64
	// Exact is set when every count is exact: whole days of per-day path
	// counts (where past a day's cap of paths the rest is the path
	// OtherPath), and minutes that kept all of their pages.
	Exact bool
	// KeptFrom, unless zero, is where the kept history of pages starts: the
	// range begins before it, and what lies before is not counted.
	KeptFrom time.Time
	// Damaged says which stored records the answer lacks because the file
	// is damaged there; Exact is then false.
	Damaged []string
}

// Steps are the series steps a history answers.
var Steps = map[string]time.Duration{
	"1m": time.Minute, "5m": 5 * time.Minute, "15m": 15 * time.Minute, "1h": time.Hour, "1d": 24 * time.Hour,
}

// MaxPoints is the most points one series answer holds.
const MaxPoints = 10_000

// ErrTooManyPoints means a series request spans more than MaxPoints steps.
var ErrTooManyPoints = errors.New("too many points")

// MaxPages is how many of the top pages a Snapshot carries.
const MaxPages = 1000
