package ingest

import (
	"hash/maphash"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// A replay applies a result whole and keeps no window, and a breakdown's
// batch keeps no visitor in its minutes (tally.Batch.SetKeysOnly): what a
// chunk's hits count in a breakdown is a count of each key in each minute,
// nothing of which hit it was. So a replay's parsing goroutines add those
// counts up as they derive the keys (keyTallies), and applying a result
// adds each key's minute to its batch once (tally.Batch.AddViews), where a
// match costs the one goroutine that applies every hit a batch update of
// its own. The live loop, which judges each hit against its windows and
// counts each key's visitors there, takes the keys hit by hit, as matches
// (Config.HitByHit).

// keyTally is what a chunk's hits count under one key of one breakdown in
// one minute.
type keyTally struct {
	counter    int32  // the breakdown's counter number
	start, end int32  // the key, in Result.keys
	minute     int64  // unix minute
	short      uint64 // a key of up to 8 bytes, as shortKey reads it
	views      tally.Views
}

// is reports whether t is of key in minute; short is shortKey(key).
func (t *keyTally) is(minute int64, key []byte, short uint64, r *Result) bool {
	if t.minute != minute || int(t.end-t.start) != len(key) {
		return false
	}
	if len(key) <= 8 {
		return t.short == short
	}
	return string(r.keys[t.start:t.end]) == string(key)
}

// shortKey reads a key of up to 8 bytes as a number (0 for a longer one),
// which a compare or a hash of it then costs no call: a status, an hour, a
// weekday, a country, a device.
func shortKey(key []byte) uint64 {
	if len(key) > 8 {
		return 0
	}
	// Byte by byte: a copy into an array read back whole would wait for
	// the copy's narrow stores to land.
	var x uint64
	for i, c := range key {
		x |= uint64(c) << (8 * i)
	}
	return x
}

// tallySlots is the size of a chunk's table of tallies, a power of two.
// It holds at most half as many tallies: a chunk of a breakdown of many
// keys (referrers, paths not found) counts the hits past them as matches,
// as the live loop does, so that a chunk costs the same bounded table
// whatever its keys.
const tallySlots = 1 << 10

// keyTallies are a chunk's tallies, in the order they were first seen, and
// an open-addressing table of them by breakdown, minute and key.
type keyTallies struct {
	list  []keyTally
	slots [tallySlots]int32 // 1 + index in list; 0: free
	// last is, by breakdown (its index among those on), 1 + the index of
	// the tally its last hit went to: the next hit's, mostly (an hour, a
	// status), which then costs a compare and no hash.
	last []int32
}

// tallySeed seeds the hash of long keys; it lasts the process, as the
// table lasts a chunk.
var tallySeed = maphash.MakeSeed()

func (t *keyTallies) reset(breakdowns int) {
	if len(t.list) > 0 {
		clear(t.slots[:])
		t.list = t.list[:0]
	}
	if len(t.last) != breakdowns {
		t.last = make([]int32, breakdowns)
	}
	clear(t.last)
}

// add counts hit h under key of breakdown j, counter number counter, and
// reports whether it could: false when the table is full, for a key it
// does not hold.
func (r *Result) tally(j int, counter int32, key []byte, h *logtally.Hit) bool {
	t := &r.tallies
	minute := logtally.FloorDiv(h.Time, 60)
	short := shortKey(key)
	if i := t.last[j]; i > 0 {
		if k := &t.list[i-1]; k.is(minute, key, short, r) {
			k.views.Count(h)
			return true
		}
	}
	slot := tallyHash(counter, minute, key, short) & (tallySlots - 1)
	for ; t.slots[slot] != 0; slot = (slot + 1) & (tallySlots - 1) {
		i := t.slots[slot]
		if k := &t.list[i-1]; k.counter == counter && k.is(minute, key, short, r) {
			t.last[j] = i
			k.views.Count(h)
			return true
		}
	}
	if len(t.list) >= tallySlots/2 {
		return false
	}
	start := len(r.keys)
	r.keys = append(r.keys, key...)
	t.list = append(t.list, keyTally{counter: counter, start: int32(start), end: int32(len(r.keys)), minute: minute,
		short: short})
	i := int32(len(t.list))
	t.slots[slot], t.last[j] = i, i
	t.list[i-1].views.Count(h)
	return true
}

// tallyHash mixes a tally's breakdown, minute and key, whose shortKey is
// short: a short key is not hashed.
func tallyHash(counter int32, minute int64, key []byte, short uint64) uint64 {
	var x uint64
	if len(key) <= 8 {
		x = short ^ uint64(len(key))<<59
	} else {
		x = maphash.Bytes(tallySeed, key)
	}
	x ^= uint64(minute)*0x9e3779b97f4a7c15 ^ uint64(counter)<<48
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	return x ^ x>>29
}

// applyTallies adds r's tallies to their breakdowns' batches.
func (c *Core) applyTallies(r *Result) {
	for i := range r.tallies.list {
		t := &r.tallies.list[i]
		s := c.router.counters[t.counter]
		s.Batch.AddViews(t.minute, r.keys[t.start:t.end], &t.views)
		c.router.touch(s)
		c.counted[t.counter].Add(t.views.N)
	}
}
