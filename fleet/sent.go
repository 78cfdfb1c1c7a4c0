package fleet

import (
	"sync"
	"time"
)

// sentSets remembers, per node and site, which visitors the recent
// minutes', hours' and days' visitor sets already hold from the node's
// applied batches, so that a node adds each visitor to a bucket's set once
// rather than with every batch. An insert the set refuses as a duplicate
// still costs PostgreSQL an index probe and, while another node's
// transaction holds the same key, a wait for it: on a busy site most of
// the visitors of a second's batch were seen earlier in the minute.
//
// Forgetting is always safe: a visitor sent again is refused by the set
// and adds nothing to the counts. Remembering wrongly is not, so a node's
// memory is dropped whenever one of its transactions or fences fails (the
// fleet database may have been restored or recreated since, or have lost
// in a crash the commits that did not wait for its disk: see Store.Fence)
// and holds only what committed.
type sentSets struct {
	mu     sync.Mutex
	byNode map[sentKey]*sent
}

type sentKey struct {
	node [16]byte
	site string
}

// sent is one node's and site's memory: visitors by bucket.
type sent struct {
	buckets map[bucketKey]map[int64]struct{}
	size    int // visitors remembered, all buckets together
}

// bucketKey names a visitor set: its kind and its key.
type bucketKey struct {
	kind  setKind
	start time.Time
}

type setKind uint8

const (
	minuteSet setKind = iota
	hourSet
	daySet
)

// Bounds of a node's memory: visitors remembered in all, and buckets of
// each kind (the newest are kept). Past either, the oldest buckets are
// forgotten.
const (
	maxSentVisitors = 1 << 20
	maxSentBuckets  = 16
)

// known returns what node has sent of site's sets, or nil. The caller
// must not change it, and reads it before its own next record.
func (s *sentSets) known(node [16]byte, site string) *sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byNode[sentKey{node, site}]
}

// has reports whether visitor v is known to be in the set k.
func (t *sent) has(k bucketKey, v int64) bool {
	if t == nil {
		return false
	}
	_, ok := t.buckets[k][v]
	return ok
}

// record remembers the visitor sets of p as node's, after they committed.
func (s *sentSets) record(node [16]byte, site string, p *payload) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sentKey{node, site}
	t := s.byNode[key]
	if t == nil {
		if s.byNode == nil {
			s.byNode = map[sentKey]*sent{}
		}
		t = &sent{buckets: map[bucketKey]map[int64]struct{}{}}
		s.byNode[key] = t
	}
	t.add(minuteSet, &p.minuteVisitors)
	t.add(hourSet, &p.hourVisitors)
	t.add(daySet, &p.dayVisitors)
	t.trim()
}

func (t *sent) add(kind setKind, rows *pairs) {
	for i, v := range rows.visitors {
		k := bucketKey{kind, rows.keys[i]}
		set := t.buckets[k]
		if set == nil {
			set = map[int64]struct{}{}
			t.buckets[k] = set
		}
		if _, ok := set[v]; !ok {
			set[v] = struct{}{}
			t.size++
		}
	}
}

// trim forgets the oldest buckets past the bounds.
func (t *sent) trim() {
	for {
		var oldest *bucketKey
		counts := map[setKind]int{}
		for k := range t.buckets {
			counts[k.kind]++
		}
		for k := range t.buckets {
			if (t.size > maxSentVisitors || counts[k.kind] > maxSentBuckets) &&
				(oldest == nil || k.start.Before(oldest.start)) {
				oldest = &k
			}
		}
		if oldest == nil {
			return
		}
		t.size -= len(t.buckets[*oldest])
		delete(t.buckets, *oldest)
	}
}

// forget drops all node has sent, of every site.
func (s *sentSets) forget(node [16]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.byNode {
		if k.node == node {
			delete(s.byNode, k)
		}
	}
}
