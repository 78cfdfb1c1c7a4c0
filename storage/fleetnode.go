package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/logtally/logtally"
	bolt "go.etcd.io/bbolt"
)

// A database's part in a fleet, besides its outbox: its identity, made at
// its first start in fleet mode and kept for its life (a copy or a backup
// of the file carries it along, which the fleet tells by the checksums of
// the batches), and the last entry the fleet acknowledged, with its
// checksum, kept when the acknowledged entries are deleted.

// NodeID returns this database's identity in the fleet, making it (16
// random bytes) if it has none yet.
func (o *Outbox) NodeID() ([16]byte, error) {
	var id [16]byte
	err := o.s.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyFleetNode); v != nil {
			if len(v) != len(id) {
				return fmt.Errorf("fleet node identity: %w", ErrCorrupt)
			}
			copy(id[:], v)
			return nil
		}
		if _, err := rand.Read(id[:]); err != nil {
			return err
		}
		return meta.Put(keyFleetNode, id[:])
	})
	return id, err
}

// SetNodeID gives this database another identity: the one of a node whose
// place it takes in the fleet (a database replacing a lost one).
func (o *Outbox) SetNodeID(id [16]byte) error {
	return o.s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFleetNode, id[:]) })
}

// Acked returns the last entry the fleet acknowledged and its checksum, as
// Delete recorded them; false if none was.
func (o *Outbox) Acked() (seq uint64, sum logtally.EntrySum, ok bool, err error) {
	err = o.s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(keyFleetAcked)
		switch {
		case v == nil:
			return nil
		case len(v) != 8+len(sum):
			return fmt.Errorf("fleet acked: %w", ErrCorrupt)
		}
		seq, ok = binary.BigEndian.Uint64(v), true
		copy(sum[:], v[8:])
		return nil
	})
	return seq, sum, ok, err
}

// putAcked records seq and sum as the last entry acknowledged, in tx.
func putAcked(tx *bolt.Tx, seq uint64, sum logtally.EntrySum) error {
	return tx.Bucket(bucketMeta).Put(keyFleetAcked, append(u64(seq), sum[:]...))
}

// Rebase makes the database continue from where the fleet stands for it:
// it drops every entry of the outbox (none of them is what the fleet
// applied under its number), numbers the next entry seq+1, records seq and
// sum as acknowledged, and moves the read positions of the files the
// fleet knows to the fleet's, and of every other file to its start: a file
// the fleet holds no position of was first read after the fleet's last
// batch (a log rotated while the node was cut off), so none of its lines
// reached the fleet. It returns how many entries it dropped. The node's own
// counts of the lines between the two positions are not undone: see
// docs/fleet.md.
func (o *Outbox) Rebase(seq uint64, sum logtally.EntrySum, positions map[string]int64) (dropped int, err error) {
	var size int64
	err = o.s.update(func(tx *bolt.Tx) error {
		ob := o.s.def.bucket(tx, bucketOutbox)
		if ob == nil {
			return fmt.Errorf("no outbox: %w", ErrCorrupt)
		}
		var keys [][]byte
		keys, size = outboxKeys(ob, ^uint64(0))
		for _, k := range keys {
			if err := ob.Delete(k); err != nil {
				return err
			}
		}
		dropped = len(keys)
		if err := ob.SetSequence(seq); err != nil {
			return err
		}
		pb := tx.Bucket(bucketPositions)
		var unknown [][]byte // collected first: no Put while a cursor walks
		if err := pb.ForEach(func(k, _ []byte) error {
			if _, ok := positions[string(k)]; !ok && !bytes.HasPrefix(k, streamPrefix) {
				unknown = append(unknown, bytes.Clone(k))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range unknown {
			if err := pb.Put(k, u64(0)); err != nil {
				return err
			}
		}
		for file, off := range positions {
			if err := pb.Put([]byte(file), u64(uint64(off))); err != nil {
				return err
			}
		}
		return putAcked(tx, seq, sum)
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: rebase on %d: %w", seq, err)
	}
	o.entries.Add(-int64(dropped))
	o.bytes.Add(-size)
	return dropped, nil
}
