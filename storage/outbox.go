package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
	bolt "go.etcd.io/bbolt"
)

// The outbox is what fleet mode adds to a commit: each batch it committed,
// encoded (tally.Batch.MarshalBinary, which names the batch's site) and
// numbered, written in the same transaction as the counts and read
// positions. There is one outbox for all sites, under the default site's
// buckets, where it was before stores counted several sites: its numbers
// order the commits of every site. A shipper sends the entries
// on in number order and deletes them once the fleet database has them. So
// a commit and what it owes the fleet are never apart: after any crash the
// outbox holds exactly the committed batches not yet acknowledged.
//
//	sites/default/outbox/<seq> uint64 commit time (unix nanoseconds), then
//	                           the batch's encoding; seq is uint64 and the
//	                           bucket's sequence (bbolt NextSequence) is the
//	                           last number given, so numbers are never reused
//
// (bucketOutbox, in keys.go.)

// ErrOutboxFull means the outbox holds Config.MaxOutbox batches: a commit
// that would add one more fails, so ingest pauses reading (the log keeps
// the lines) until the shipper has sent some. It is the domain's, so that
// the status can tell it from a failing disk.
var ErrOutboxFull = logtally.ErrOutboxFull

// Outbox is the store's queue of committed batches waiting to be shipped
// to a fleet database. It is safe for concurrent use: commits add to it,
// one shipper reads and deletes.
type Outbox struct {
	s       *Store
	entries atomic.Int64
	bytes   atomic.Int64
	written chan struct{} // a value after each commit that adds an entry
}

// Outbox returns the store's outbox. Commits write to it only when
// Config.Outbox is set.
func (s *Store) Outbox() *Outbox { return s.outbox }

// openOutbox creates the outbox bucket when commits are to write to it,
// and counts what it holds.
func (s *Store) openOutbox(tx *bolt.Tx) error {
	s.outbox = &Outbox{s: s, written: make(chan struct{}, 1)}
	site := tx.Bucket(bucketSites).Bucket(s.def.key)
	ob := site.Bucket(bucketOutbox)
	if ob == nil && s.cfg.Outbox {
		var err error
		if ob, err = site.CreateBucket(bucketOutbox); err != nil {
			return err
		}
	}
	if ob == nil {
		return nil
	}
	return ob.ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) < 8 {
			return fmt.Errorf("outbox entry %x: %w", k, ErrCorrupt)
		}
		s.outbox.entries.Add(1)
		s.outbox.bytes.Add(int64(len(v)))
		return nil
	})
}

// entry encodes what a commit of b adds to the outbox: nil when
// commits do not write one, or b holds nothing to ship (only read
// positions). It fails with ErrOutboxFull when the outbox is full.
func (o *Outbox) entry(b *tally.Batch, now time.Time) ([]byte, error) {
	cfg := o.s.cfg
	if !cfg.Outbox || b.MinuteCount() == 0 {
		return nil, nil
	}
	if n := o.entries.Load(); cfg.MaxOutbox > 0 && n >= int64(cfg.MaxOutbox) {
		return nil, fmt.Errorf("%w: %d batches wait to be shipped", ErrOutboxFull, n)
	}
	return b.AppendBinary(binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano())))
}

// put writes an entry under the next number, in a commit's transaction.
func (o *Outbox) put(tx *bolt.Tx, entry []byte) error {
	ob := o.s.def.bucket(tx, bucketOutbox)
	seq, err := ob.NextSequence()
	if err != nil {
		return err
	}
	ob.FillPercent = 1 // entries are appended in key order
	return ob.Put(u64(seq), entry)
}

// added counts an entry whose commit succeeded and wakes the shipper.
func (o *Outbox) added(entry []byte) {
	if entry == nil {
		return
	}
	o.entries.Add(1)
	o.bytes.Add(int64(len(entry)))
	select {
	case o.written <- struct{}{}:
	default:
	}
}

// Written returns a channel that receives a value after a commit adds an
// entry (several commits may leave one value): the shipper's wake-up.
func (o *Outbox) Written() <-chan struct{} { return o.written }

// Next returns the entry with the smallest number above after, and false
// when there is none.
func (o *Outbox) Next(after uint64) (logtally.OutboxEntry, bool, error) {
	var e logtally.OutboxEntry
	var ok bool
	err := o.s.view(func(tx *bolt.Tx) error {
		ob := o.s.def.bucket(tx, bucketOutbox)
		if ob == nil || after == ^uint64(0) {
			return nil
		}
		k, v := ob.Cursor().Seek(u64(after + 1))
		if k == nil {
			return nil
		}
		if len(k) != 8 || len(v) < 8 {
			return fmt.Errorf("outbox entry %x: %w", k, ErrCorrupt)
		}
		e = logtally.OutboxEntry{Seq: uint64Key(k), Committed: time.Unix(0, int64(binary.BigEndian.Uint64(v))),
			Batch: bytes.Clone(v[8:])}
		ok = true
		return nil
	})
	if err != nil {
		return logtally.OutboxEntry{}, false, fmt.Errorf("outbox: %w", err)
	}
	return e, ok, nil
}

// Delete deletes the entries numbered up to through, in one transaction,
// and returns how many it deleted: the shipper calls it once the fleet
// database has them. sum is the checksum of entry through, which the
// database keeps as the last acknowledged (see Acked).
func (o *Outbox) Delete(through uint64, sum logtally.EntrySum) (int, error) {
	var n, size int64
	err := o.s.update(func(tx *bolt.Tx) error {
		ob := o.s.def.bucket(tx, bucketOutbox)
		if ob == nil {
			return nil
		}
		var keys [][]byte
		keys, size = outboxKeys(ob, through)
		for _, k := range keys {
			if err := ob.Delete(k); err != nil {
				return err
			}
		}
		n = int64(len(keys))
		return putAcked(tx, through, sum)
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: delete through %d: %w", through, err)
	}
	o.entries.Add(-n)
	o.bytes.Add(-size)
	return int(n), nil
}

// outboxKeys returns the keys of the entries numbered up to through, and
// their values' size: to delete them after the cursor is done.
func outboxKeys(ob *bolt.Bucket, through uint64) (keys [][]byte, size int64) {
	end := u64(through)
	c := ob.Cursor()
	for k, v := c.First(); k != nil && bytes.Compare(k, end) <= 0; k, v = c.Next() {
		keys = append(keys, bytes.Clone(k))
		size += int64(len(v))
	}
	return keys, size
}

// Stats returns how much waits in the outbox.
func (o *Outbox) Stats() (logtally.OutboxStats, error) {
	st := logtally.OutboxStats{Entries: o.entries.Load(), Bytes: o.bytes.Load()}
	err := o.s.view(func(tx *bolt.Tx) error {
		ob := o.s.def.bucket(tx, bucketOutbox)
		if ob == nil {
			return nil
		}
		st.LastSeq = ob.Sequence()
		if _, v := ob.Cursor().First(); len(v) >= 8 {
			st.Oldest = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
		}
		return nil
	})
	return st, err
}
