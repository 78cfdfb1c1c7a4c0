package storage

import (
	"bytes"
	"encoding/binary"
	"slices"
	"time"

	"github.com/logtally/logtally"
)

// The file's layout: its buckets, the names of its keys, and how every key
// is encoded, here and nowhere else. Every site (a logtally.ValidSite name,
// logtally.DefaultSite always among them) has the same buckets under
// sites/<site>. Keys that are times are big-endian, so that byte order is
// time order and a range is a cursor's Seek then Next.
//
//	meta/schema                     uint64 SchemaVersion
//	meta/retention                  the retention in force: minutes, hours,
//	                                days, 3 x uint64 seconds (0: forever)
//	meta/fleet-node                 16 bytes: this database's identity in the
//	                                fleet, made at its first start in fleet mode
//	meta/fleet-acked                uint64 seq, 16-byte sum: the last outbox
//	                                entry the fleet acknowledged (see outbox.go)
//	positions/<file id>             uint64 offset after the last committed line
//	positions/stream:<path>         int64 unix nanoseconds: where the stream of a
//	                                followed path starts (see StreamSince)
//	sites/<site>/minutes/<minute>   record (unix minute, uint64); a minute
//	                                within Config.ExactVisitorsSpan of the
//	                                newest, or written lately, holds its
//	                                exact visitor set in place of its sketch
//	                                (see record.set)
//	sites/<site>/hours/<hour>       record (unix hour, uint64)
//	sites/<site>/days/<yyyymmdd>    record (uint32 date in the zone of Config.TZ);
//	                                none for a day kept as its hours alone
//	                                (see lazyday.go)
//	sites/<site>/paths/<shard>      all-time page views of the paths of one of
//	                                256 hash shards (uint16), sorted by path
//	sites/<site>/daypaths/<yyyymmdd><shard>  the same for one day
//	sites/<site>/pathlog/<yyyymmdd><seq>     page views per path of a day, as
//	                                committed and not yet compacted (seq uint64)
//	sites/<site>/counters/<name>    bookkeeping: distinct paths per day and
//	                                all-time (uvarint), last day folded, the
//	                                newest line's minute, from when each
//	                                resolution is held whole (retention.go),
//	                                the first day kept as its hours (lazyday.go)
//	sites/<site>/seconds/<second>   live window state of one second (unix, uint64)
//	sites/default/outbox/<seq>      a committed batch of any site waiting to be
//	                                shipped to the fleet (fleet mode; see outbox.go)
//
// The buckets of the file and of the default site are created in the one
// transaction that lays out a new file (Store.init); another site's, in
// the commit that first brings it (createSite).
var (
	bucketMeta      = []byte("meta")
	bucketPositions = []byte("positions")
	bucketSites     = []byte("sites")
	bucketMinutes   = []byte("minutes")
	bucketHours     = []byte("hours")
	bucketDays      = []byte("days")
	bucketPaths     = []byte("paths")
	bucketDayPaths  = []byte("daypaths")
	bucketCounters  = []byte("counters")
	bucketSeconds   = []byte("seconds")
	bucketPathLog   = []byte("pathlog")
	bucketOutbox    = []byte("outbox")

	siteBuckets = [][]byte{bucketMinutes, bucketHours, bucketDays, bucketPaths,
		bucketDayPaths, bucketCounters, bucketSeconds, bucketPathLog}
)

// bucketVisitors held the visitor sets of recent minutes, apart from their
// records, until schema 6 (see moveSets).
var bucketVisitors = []byte("visitors")

// The keys of meta and of a site's counters.
var (
	keySchema     = []byte("schema")
	keySalt       = []byte("salt")        // meta, schema 3 and before: the visitor-hash salt (see salt.go)
	keyRetention  = []byte("retention")   // meta: the retention in force, 3 x uint64 seconds (0: forever)
	keyFleetSalt  = []byte("fleet-salt")  // meta, schema 3 and before: the fleet's salt (see salt.go)
	keyFleetNode  = []byte("fleet-node")  // meta: this database's identity in the fleet
	keyFleetAcked = []byte("fleet-acked") // meta: the last entry acknowledged, and its sum

	keyFolded = []byte("folded") // counters: last day folded into all-time totals
	keyNewest = []byte("newest") // counters: the start of the newest minute with a line, unix seconds
	// keyKeptFrom is in counters: for minutes, hours and days, 3 x uint64
	// unix seconds (0: none) before which a longer retention that took over
	// finds nothing, because a shorter one pruned it.
	keyKeptFrom = []byte("keptfrom")
)

// u64 encodes v in 8 bytes, big-endian: a key that is a unix second,
// minute or hour or a sequence number, and a value that is one number.
func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// lowerKey returns the lower of two keys, nil standing for the lowest:
// where a scan from either would start.
func lowerKey(a, b []byte) []byte {
	if a == nil || b == nil {
		return nil
	}
	if bytes.Compare(b, a) < 0 {
		return bytes.Clone(b)
	}
	return a
}

// uint64Key reads a key that u64 wrote.
func uint64Key(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// minuteKey is the key of the minute of t.
func minuteKey(t time.Time) []byte { return u64(uint64(logtally.FloorDiv(t.Unix(), 60))) }

// hourKey is the key of the hour of t.
func hourKey(t time.Time) []byte { return u64(uint64(logtally.FloorDiv(t.Unix(), 3600))) }

func unixMinute(m int64) time.Time { return time.Unix(m*60, 0).UTC() }

// minuteTime is the start of the minute that a minute key names.
func minuteTime(k []byte) time.Time { return unixMinute(int64(uint64Key(k))) }

// hourTime is the start of the hour that an hour key names.
func hourTime(k []byte) time.Time { return time.Unix(int64(uint64Key(k))*3600, 0).UTC() }

// dayKey is the calendar date of t in loc as a big-endian yyyymmdd.
func dayKey(t time.Time, loc *time.Location) []byte {
	y, m, d := t.In(loc).Date()
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(y*10000+int(m)*100+d))
	return b[:]
}

// dayCache is the dayKey, as a string, of the minutes of one day in loc,
// kept while the minutes asked of it are of that day: a commit prepares
// its minutes in time order, a day of them at a time, and a day's bounds
// cost a conversion where each minute's day costs one and a string.
type dayCache struct {
	loc      *time.Location
	key      string
	from, to int64 // unix minutes whose start is in the day, at one offset
}

// of returns the dayKey of unix minute m, as a string. The minutes it
// keeps the day for are those of m's local day at m's offset: between two
// local midnights, and within the period of the zone that m is in (a
// change of offset may start a day at 01:00, or give an hour twice), so
// that no assumption about where a zone puts its midnights is made.
func (c *dayCache) of(m int64) string {
	if c.key != "" && c.from <= m && m < c.to {
		return c.key
	}
	t := unixMinute(m).In(c.loc)
	y, mo, d := t.Date()
	_, offset := t.Zone()
	lo := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix() - int64(offset)
	hi := lo + 24*3600
	start, end := t.ZoneBounds() // zero: unbounded
	if !start.IsZero() {
		lo = max(lo, start.Unix())
	}
	if !end.IsZero() {
		hi = min(hi, end.Unix())
	}
	c.key = string(dayKey(t, c.loc))
	c.from, c.to = -logtally.FloorDiv(-lo, 60), -logtally.FloorDiv(-hi, 60)
	return c.key
}

// dayBytes is the key of day, a yyyymmdd.
func dayBytes(d uint32) []byte { return binary.BigEndian.AppendUint32(nil, d) }

// uint32Key reads the day (yyyymmdd) that a key starts with; 0 if none.
func uint32Key(k []byte) uint32 {
	if len(k) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(k)
}

// nextDayKey is the first key past every key that starts with the day
// that k starts with: where a cursor seeks to skip the rest of a day.
func nextDayKey(k []byte) []byte { return dayBytes(uint32Key(k) + 1) }

// dayStart is the start of the day a dayKey names.
func dayStart(k []byte, loc *time.Location) time.Time {
	v := int(binary.BigEndian.Uint32(k))
	return time.Date(v/10000, time.Month(v/100%100), v%100, 0, 0, 0, 0, loc)
}

// dayTime is the start of the day, in the store's zone, that a key starts
// with.
func (s *Site) dayTime(k []byte) time.Time { return dayStart(k[:4], s.loc) }

// logKey is a path log value's key: the day, then a sequence number.
func logKey(day uint32, seq uint64) []byte {
	k := binary.BigEndian.AppendUint32(make([]byte, 0, 12), day)
	return binary.BigEndian.AppendUint64(k, seq)
}

// logKeySize is the length of every logKey.
const logKeySize = 12

// allTimePrefix is the prefix of the all-time shards in the paths bucket;
// a day's shards in daypaths are prefixed by its dayBytes.
var allTimePrefix = []byte{}

// shardKey is the key of a path shard under prefix.
func shardKey(prefix []byte, shard uint16) []byte {
	return binary.BigEndian.AppendUint16(bytes.Clone(prefix), shard)
}

// pathCounterKey is the counters key of the number of distinct paths under
// a shard prefix.
func pathCounterKey(prefix []byte) []byte { return append([]byte("paths/"), prefix...) }

// streamKey is where the start of a followed path's stream is kept, among
// the positions: file ids start with "fp:".
func streamKey(path string) []byte { return append(slices.Clip(streamPrefix), path...) }

// streamPrefix begins the positions keys that are not a file's: streamKey.
var streamPrefix = []byte("stream:")
