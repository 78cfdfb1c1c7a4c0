package counter

import (
	"cmp"
	"slices"
)

// Keys counts the lines of one counter per key, for at most a fixed number
// of keys, by Space-Saving (Metwally, Agrawal, El Abbadi 2005): when a new
// key comes and the table is full, it takes over the entry with the
// smallest count and inherits that count. The counts of the entries add up
// to the lines counted, so the smallest is at most Total/max: a key with
// more than that share is never taken over, and a key that was never taken
// over is counted exactly.
//
// Keys only adds, which is what a minute, hour or day of history needs; a
// sliding window, which also takes counts back, keeps its keys as it keeps
// its paths. A Keys is not safe for concurrent use.
type Keys struct {
	max     int
	index   map[string]int32 // key -> entry
	entries []keyEntry
	heap    []int32 // entries, smallest count first
	total   int64
	folded  int64 // keys that took over another key's entry, ever
}

type keyEntry struct {
	key   string
	count int64 // what decides who is taken over: own plus what was inherited
	own   int64 // lines counted under key since it took the entry
	pos   int32 // index in heap
}

// KeyCount is one key and its count.
type KeyCount struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// NewKeys returns an empty table of at most limit keys (at least 1).
func NewKeys(limit int) *Keys {
	limit = min(max(limit, 1), 1<<31-1)
	return &Keys{max: limit, index: make(map[string]int32, min(limit, 1024))}
}

// Add counts n lines under key. It allocates only for a key it does not
// hold.
func (k *Keys) Add(key []byte, n int64) {
	k.total += n
	if id, ok := k.index[string(key)]; ok {
		e := &k.entries[id]
		e.count += n
		e.own += n
		k.down(int(e.pos))
		return
	}
	if len(k.entries) < k.max {
		id := int32(len(k.entries))
		k.entries = append(k.entries, keyEntry{key: string(key), count: n, own: n, pos: int32(len(k.heap))})
		k.index[k.entries[id].key] = id
		k.heap = append(k.heap, id)
		k.up(len(k.heap) - 1)
		return
	}
	// Space-Saving: the key takes over the smallest entry and its count.
	id := k.heap[0]
	e := &k.entries[id]
	delete(k.index, e.key)
	e.key = string(key)
	e.count += n
	e.own = n
	k.index[e.key] = id
	k.folded++
	k.down(0)
}

// Count returns the lines counted under key since it took its entry, and
// whether the table holds it. It is the key's exact count unless the key
// was folded out of the table before and came back.
func (k *Keys) Count(key string) (int64, bool) {
	if id, ok := k.index[key]; ok {
		return k.entries[id].own, true
	}
	return 0, false
}

// Len returns the number of keys held.
func (k *Keys) Len() int { return len(k.index) }

// Total returns the lines counted, under every key ever added.
func (k *Keys) Total() int64 { return k.total }

// Folded returns how many times a new key took over another's entry: zero
// while every count is exact.
func (k *Keys) Folded() int64 { return k.folded }

// Top returns up to n keys (all when n < 0), most counted first, then by
// key, and the lines counted under the others: what a stored minute or day
// keeps, with the rest under logtally.OtherPath.
func (k *Keys) Top(n int) (top []KeyCount, other int64) {
	top = make([]KeyCount, 0, len(k.entries))
	for _, e := range k.entries {
		top = append(top, KeyCount{e.key, e.own})
	}
	slices.SortFunc(top, func(a, b KeyCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if n >= 0 && len(top) > n {
		top = slices.Clip(top[:n])
	}
	other = k.total
	for _, kc := range top {
		other -= kc.Count
	}
	return top, other
}

func (k *Keys) less(i, j int) bool {
	return k.entries[k.heap[i]].count < k.entries[k.heap[j]].count
}

func (k *Keys) swap(i, j int) {
	k.heap[i], k.heap[j] = k.heap[j], k.heap[i]
	k.entries[k.heap[i]].pos = int32(i)
	k.entries[k.heap[j]].pos = int32(j)
}

func (k *Keys) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !k.less(i, p) {
			return
		}
		k.swap(i, p)
		i = p
	}
}

func (k *Keys) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(k.heap) {
			return
		}
		c := l
		if r := l + 1; r < len(k.heap) && k.less(r, l) {
			c = r
		}
		if !k.less(c, i) {
			return
		}
		k.swap(i, c)
		i = c
	}
}
