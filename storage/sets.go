package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A minute keeps its exact visitors while it is within
// Config.ExactVisitorsSpan of the newest minute, or was written in the last
// recentWrite: a late line then adds to the set, and the count stays
// exact. Since schema 6 the set is stored in the minute's record, in place
// of its sketch (record.set), which the set stands for: one value a
// minute rather than a record and a set, each with its key and bbolt's
// overhead, a Get and a Put, and no sketch built for a minute stored new.
// A set of a few visitors is about as large as their sketch, a busy
// minute's larger (8 bytes a visitor, against about 3), which a series
// reads whole. Once the minute is past the span, compaction (part of
// Prune) rewrites the record with the sketch its set makes, the sketch a
// commit of those visitors made before (setSketch); reading it, a query
// cannot tell the two apart.

// scanBatch is how many minutes one compaction transaction looks at most:
// the first compaction after Open looks through every stored minute, and
// holds the write lock (writeMu and bbolt's) for a few milliseconds at a time.
const scanBatch = 16 * pruneBatch

// setsPass is the compaction of one site's sets within a prune of many
// (compactSets): the minutes from at to end, and the first set kept.
type setsPass struct {
	si      *Site
	at, end []byte
	kept    []byte
	done    bool
}

// setsBudget is what one compaction transaction may still do: turn and
// scan minutes, whichever sites they are of.
type setsBudget struct{ turn, scan int }

// compactSets turns the visitor sets of each site's minutes before its
// end (ends[i], nil: none) that no commit wrote in the last recentWrite
// into the sketches they stand for, and returns how many it turned. The
// sites share transactions, of up to pruneBatch minutes turned and
// scanBatch looked at: a pruner passing over a thousand sites a minute,
// each with a minute newly past the span, commits a few transactions, not
// a thousand (two syncs each). The minutes' visitor counts stay exact; a
// later line can only add to the sketch, and makes them approximate (see
// mergeMinute).
func (s *Store) compactSets(ctx context.Context, sites []*Site, ends [][]byte, now time.Time, fails failures) (int, error) {
	var passes []*setsPass
	s.writeMu.Lock()
	for i, si := range sites {
		if ends[i] != nil && !fails.failed(si) {
			passes = append(passes, &setsPass{si: si, at: si.setsFrom, end: ends[i]})
			// Commits from now on lower it to the minutes they give a set.
			si.setsFrom = ends[i]
		}
	}
	s.writeMu.Unlock()
	var buf sketchBuf
	total := 0
	var err error
	for pending := slices.Clone(passes); len(pending) > 0; {
		if err = ctx.Err(); err != nil {
			break
		}
		n, roundErr := s.compactSetsRound(pending, now, &buf)
		total += n
		if roundErr != nil {
			eachAlone(fails, pending, func(p *setsPass) *Site { return p.si }, func(p *setsPass) error {
				n, err := s.compactSetsRound([]*setsPass{p}, now, &buf)
				total += n
				return err
			})
		}
		pending = slices.DeleteFunc(pending, func(p *setsPass) bool { return p.done || fails.failed(p.si) })
	}
	s.writeMu.Lock()
	for _, p := range passes {
		if !p.done { // the sets from at on are not all turned
			p.si.setsFrom = lowerKey(p.si.setsFrom, p.at)
		}
		if p.kept != nil {
			p.si.setsFrom = lowerKey(p.si.setsFrom, p.kept)
		}
	}
	s.writeMu.Unlock()
	return total, err
}

// compactSetsRound turns, in one transaction under writeMu, what its
// budget allows of the passes' sets, in order, with the minutes that
// commits wrote in the recentWrite before now kept: asked for each
// transaction, under the lock that commits hold until they have said what
// they wrote, a minute that a commit wrote while compaction went on keeps
// its set. It moves each pass on once the transaction has committed (or
// turned nothing), and returns how many it turned.
func (s *Store) compactSetsRound(passes []*setsPass, now time.Time, buf *sketchBuf) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	type moved struct {
		next []byte
		kept []byte
	}
	var moves []moved
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		moves, n = moves[:0], 0
		budget := setsBudget{turn: pruneBatch, scan: scanBatch}
		for _, p := range passes {
			if budget.turn == 0 || budget.scan == 0 {
				break
			}
			recent := p.si.written.recent(now)
			keep := func(k []byte) bool { return recent(int64(uint64Key(k))) }
			kept := p.kept
			turned, next, err := p.si.compactSetsTx(tx, p.at, p.end, keep, &kept, buf, &budget)
			if err != nil {
				return err
			}
			n += turned
			moves = append(moves, moved{next, kept})
		}
		if n == 0 {
			return errNothingToDelete
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNothingToDelete) {
		return 0, err
	}
	for i, m := range moves {
		p := passes[i]
		p.kept = m.kept
		if m.next == nil {
			p.done = true
		} else {
			p.at = m.next
		}
	}
	if err != nil {
		n = 0
	}
	return n, nil
}

// compactSetsTx turns, in tx, the visitor sets of the minutes in [from,
// end) (from nil: from the first) that keep says not to keep into their
// sketches, made in buf, as far as budget lets it look and turn. It sets
// *kept to the first set kept, if none was, and returns how many it
// turned and the key to go on from, nil if it reached end. A damaged
// record is passed over: its set stays as it is, and the store's damage
// names it.
func (s *Site) compactSetsTx(tx *bolt.Tx, from, end []byte, keep func(k []byte) bool, kept *[]byte, buf *sketchBuf, budget *setsBudget) (n int, next []byte, err error) {
	var keys, values [][]byte
	mb := s.bucket(tx, bucketMinutes)
	c := mb.Cursor()
	k, v := c.First()
	if from != nil {
		k, v = c.Seek(from)
	}
	for ; k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
		if budget.turn == 0 || budget.scan == 0 {
			next = bytes.Clone(k)
			break
		}
		budget.scan--
		if !holdsSet(v) {
			continue
		}
		if keep(k) {
			if *kept == nil {
				*kept = bytes.Clone(k)
			}
			continue
		}
		sketched, err := sketchSet(v, buf)
		if err != nil {
			s.damaged(bucketMinutes, k, err) // left as it is, and said
			continue
		}
		keys, values = append(keys, bytes.Clone(k)), append(values, sketched)
		budget.turn--
	}
	mb.FillPercent = 1 // as commits write minutes
	for i, k := range keys {
		if err := mb.Put(k, values[i]); err != nil {
			return 0, next, err
		}
	}
	return len(keys), next, nil
}

// holdsSet reports whether an encoded minute says that it holds its
// visitor set, by its flags alone: its checksum is not checked, so that
// compaction passes over the minutes that hold none by a byte each.
func holdsSet(v []byte) bool {
	return len(v) > 1 && v[0] == recordEncoding && v[1]&flagSet != 0
}

// sketchSet returns a minute record that holds its visitor set (see
// record.set) with the set's sketch in its place: the record a minute had
// before minutes kept their sets in place of their sketches, with its
// visitors compacted away (see setSketch).
func sketchSet(v []byte, buf *sketchBuf) ([]byte, error) {
	var r record
	// The set aliases v, read once into its hashes.
	if _, err := r.decodeFields(v, true); err != nil {
		return nil, err
	}
	set, err := decodeHashes(r.set)
	if err != nil {
		return nil, err
	}
	sk, err := setSketch(set, r.denseSet, buf)
	if err != nil {
		return nil, err
	}
	r.set, r.denseSet = nil, false
	return r.encodeSketch(sk), nil
}

// moveSets moves the visitor sets that a file of schema 5 kept in a
// bucket of their own (bucketVisitors) into their minutes' records, site
// by site, in transactions of up to pruneBatch minutes, then drops the
// bucket. Open writes schema 6 first, in its own transaction: a file whose
// move was cut short is refused by a program of schema 5, which would take
// a record holding a set for a damaged one, and its move goes on at the
// next Open. The caller holds no lock: Open calls it before the store is
// used.
func (s *Store) moveSets() error {
	var sites []*Site
	err := s.view(func(tx *bolt.Tx) error {
		for _, si := range s.siteList() {
			if tx.Bucket(bucketSites).Bucket(si.key).Bucket(bucketVisitors) != nil {
				sites = append(sites, si)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, si := range sites {
		for {
			n, err := si.moveSetsTx(&s.upgraded.sets)
			if err != nil {
				return fmt.Errorf("site %s: move visitor sets into minutes: %w", si.name, err)
			}
			if n == 0 {
				break
			}
		}
	}
	return nil
}

// setsMove is what moveSets did: the sets it moved into their minutes, and
// those it dropped, which Open's caller logs.
type setsMove struct {
	moved, dropped int
	// first names the first set dropped: its site, its minute and why.
	first string
}

// SetsMoved reports what Open did to the visitor sets of a file of schema
// 5: how many it moved into their minutes' records, and how many it
// dropped, their minutes keeping the sketch they had, and why the first
// was (see moveSets).
func (s *Store) SetsMoved() (moved, dropped int, first string) {
	m := s.upgraded.sets
	return m.moved, m.dropped, m.first
}

// moveSetsTx moves up to pruneBatch visitor sets of the site into their
// minutes' records, deleting them from bucketVisitors, or drops the bucket
// once it is empty; it returns how many it took, 0 when none is left, and
// adds them to m.
func (s *Site) moveSetsTx(m *setsMove) (n int, err error) {
	var done setsMove
	err = s.st.update(func(tx *bolt.Tx) error {
		done = setsMove{}
		site := tx.Bucket(bucketSites).Bucket(s.key)
		vb := site.Bucket(bucketVisitors)
		if vb == nil {
			return nil
		}
		var keys [][]byte
		c := vb.Cursor()
		for k, _ := c.First(); k != nil && len(keys) < pruneBatch; k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		if len(keys) == 0 {
			return site.DeleteBucket(bucketVisitors)
		}
		mb := site.Bucket(bucketMinutes)
		for _, k := range keys {
			v, err := withSet(mb.Get(k), vb.Get(k))
			switch {
			case err != nil:
				done.dropped++
				if done.first == "" {
					done.first = fmt.Sprintf("site %s, minute %s: %v", s.name, minuteTime(k).Format(time.RFC3339), err)
				}
			case v != nil:
				if err := mb.Put(k, v); err != nil {
					return err
				}
				done.moved++
			}
			if err := vb.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err == nil {
		m.moved, m.dropped = m.moved+done.moved, m.dropped+done.dropped
		if m.first == "" {
			m.first = done.first
		}
	}
	return n, err
}

// withSet returns a minute's record v, stored with its sketch by a program
// of schema 5, holding instead its visitor set, as that program stored it
// apart; nil if there is nothing to move (an empty set of a minute of no
// visitors, or a record that holds its set already); and an error if the
// set cannot stand for the sketch (no record, a damaged one or a damaged
// set, a count that is not the set's), which is then dropped, as
// compaction would have: the record keeps its sketch.
func withSet(v, set []byte) ([]byte, error) {
	var r record
	if v == nil {
		return nil, errors.New("no minute record")
	}
	sk, err := r.decodeFields(v, true)
	switch {
	case err != nil:
		return nil, err
	case r.set != nil || len(set) == 0 && r.Visitors == 0 && !r.Approximate:
		return nil, nil
	}
	if err := checkSetField(set, &r); err != nil {
		return nil, err
	}
	// The form of the sketch is the one commits gave it, dense from
	// denseFrom visitors, repeats counted (see addSketch).
	r.set, r.denseSet = set, !isSparse(sk)
	enc, err := r.encode()
	if err != nil {
		return nil, err
	}
	var back record
	if err := back.decode(enc, true); err != nil {
		return nil, fmt.Errorf("the minute with its set: %w", err)
	}
	return enc, nil
}
