package storage

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// outboxBatch is a small batch with live seconds, as run commits them.
func outboxBatch(visitor uint64) *tally.Batch {
	b := tally.NewBatch()
	addHit(b, page(0, visitor, "/a"), 200, 10, true)
	addHit(b, page(61, visitor+1, "/b"), 200, 10, true)
	addHit(b, asset(62), 200, 10, true)
	b.AddLines(3)
	b.SetPosition("fp:1", 300)
	return b
}

// TestOutboxEntryPerCommit commits three batches and a positions-only one:
// each batch with counts is in the outbox, numbered 1, 2, 3, and decodes
// to what was committed; deleting through 2 leaves the third; numbers go on
// after a reopen.
func TestOutboxEntryPerCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path, Outbox: true})
	var want [][]byte
	for i := range 3 {
		b := outboxBatch(uint64(10 * (i + 1)))
		enc, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, enc)
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	positions := tally.NewBatch()
	positions.SetPosition("fp:1", 400)
	if err := s.Commit(positions); err != nil {
		t.Fatal(err)
	}
	o := s.Outbox()
	select {
	case <-o.Written():
	default:
		t.Error("no wake-up after commits")
	}
	st, err := o.Stats()
	if err != nil || st.Entries != 3 || st.LastSeq != 3 || st.Oldest.IsZero() || st.Bytes <= int64(len(want[0])) {
		t.Fatalf("Stats = %+v, %v; want 3 entries, last 3", st, err)
	}
	var after uint64
	for i := range 3 {
		e, ok, err := o.Next(after)
		if err != nil || !ok {
			t.Fatalf("Next(%d) = %v, %v", after, ok, err)
		}
		if e.Seq != uint64(i+1) || string(e.Batch) != string(want[i]) || !e.Committed.Equal(fixedNow()) {
			t.Errorf("entry %d: seq %d, committed %s, batch equal %v", i+1, e.Seq, e.Committed, string(e.Batch) == string(want[i]))
		}
		var b tally.Batch
		if err := b.UnmarshalBinary(e.Batch); err != nil || b.Lines() != 3 {
			t.Errorf("entry %d decodes to %d lines, %v", i+1, b.Lines(), err)
		}
		after = e.Seq
	}
	if _, ok, err := o.Next(after); ok || err != nil {
		t.Errorf("Next after the last = %v, %v; want none", ok, err)
	}
	second, _, _ := o.Next(1)
	if n, err := o.Delete(2, second.Sum()); n != 2 || err != nil {
		t.Fatalf("Delete(2) = %d, %v", n, err)
	}
	s.Close()

	s = mustOpen(t, Config{Path: path, Outbox: true})
	o = s.Outbox()
	if st, _ := o.Stats(); st.Entries != 1 || st.LastSeq != 3 || st.Bytes != int64(len(want[2])+8) {
		t.Errorf("after reopen: %+v, want the third entry of %d bytes", st, len(want[2])+8)
	}
	if err := s.Commit(outboxBatch(99)); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := o.Next(3); !ok || e.Seq != 4 {
		t.Errorf("next after reopen = %d, %v; want 4", e.Seq, ok)
	}
	if seq, sum, ok, err := o.Acked(); seq != 2 || sum != second.Sum() || !ok || err != nil {
		t.Errorf("Acked after reopen = %d, %x, %v, %v; want 2 and the second entry's sum", seq, sum, ok, err)
	}
}

// TestOutboxNodeID: a database's fleet identity is made once and kept,
// until another is set.
func TestOutboxNodeID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path, Outbox: true})
	id, err := s.Outbox().NodeID()
	if err != nil || id == ([16]byte{}) {
		t.Fatalf("NodeID = %x, %v", id, err)
	}
	s.Close()
	s = mustOpen(t, Config{Path: path, Outbox: true})
	if again, err := s.Outbox().NodeID(); again != id || err != nil {
		t.Errorf("NodeID after reopen = %x, %v; want %x", again, err, id)
	}
	other := [16]byte{1, 2, 3}
	if err := s.Outbox().SetNodeID(other); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Outbox().NodeID(); got != other {
		t.Errorf("NodeID after SetNodeID = %x, want %x", got, other)
	}
}

// TestOutboxRebase: a database behind the fleet drops its outbox, numbers
// on from the fleet's cursor and takes the fleet's read positions; a file
// the fleet holds no position of is read again from its start (none of its
// lines reached the fleet), and where a stream starts stays.
func TestOutboxRebase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, Config{Path: path, Outbox: true})
	for i := range 3 {
		b := outboxBatch(uint64(i))
		b.SetPosition("fp:local", int64(100*(i+1)))
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	since := time.Unix(1_700_000_000, 0)
	if err := s.SetStreamSince("/var/log/access.log", since); err != nil {
		t.Fatal(err)
	}
	sum := logtally.EntrySum{9}
	n, err := s.Outbox().Rebase(10, sum, map[string]int64{"fp:1": 5000})
	if n != 3 || err != nil {
		t.Fatalf("Rebase = %d, %v; want 3 entries dropped", n, err)
	}
	s.Close()
	s = mustOpen(t, Config{Path: path, Outbox: true})
	o := s.Outbox()
	if st, _ := o.Stats(); st.Entries != 0 || st.LastSeq != 10 || st.Bytes != 0 {
		t.Errorf("after Rebase: %+v, want empty at 10", st)
	}
	if seq, got, ok, _ := o.Acked(); seq != 10 || got != sum || !ok {
		t.Errorf("Acked = %d, %x, %v", seq, got, ok)
	}
	for file, want := range map[string]int64{"fp:1": 5000, "fp:local": 0} {
		if off, _, _ := s.Position(file); off != want {
			t.Errorf("position of %s = %d, want %d", file, off, want)
		}
	}
	if got, ok, _ := s.StreamSince("/var/log/access.log"); !ok || !got.Equal(since) {
		t.Errorf("StreamSince after Rebase = %v, %v; want %v", got, ok, since)
	}
	if err := s.Commit(outboxBatch(7)); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := o.Next(0); !ok || e.Seq != 11 {
		t.Errorf("first entry after Rebase = %d, %v; want 11", e.Seq, ok)
	}
}

// TestOutboxFullFailsCommit fills a two-entry outbox: the third commit
// fails with ErrOutboxFull and stores nothing, so it can be committed
// again once an entry is shipped.
func TestOutboxFullFailsCommit(t *testing.T) {
	s := mustOpen(t, Config{Outbox: true, MaxOutbox: 2})
	for i := range 2 {
		if err := s.Commit(outboxBatch(uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	b := outboxBatch(7)
	if err := s.Commit(b); !errors.Is(err, ErrOutboxFull) {
		t.Fatalf("third commit = %v, want ErrOutboxFull", err)
	}
	if got, _ := s.Minutes(t0, t0); len(got) != 1 || got[0].Requests != 2 {
		t.Errorf("minute after the refused commit = %+v, want 2 requests", got)
	}
	if off, _, _ := s.Position("fp:1"); off != 300 {
		t.Fatalf("position = %d", off)
	}
	if _, err := s.Outbox().Delete(1, logtally.EntrySum{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatalf("commit after a shipment: %v", err)
	}
	if st, _ := s.Outbox().Stats(); st.Entries != 2 || st.LastSeq != 3 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestOutboxFailedCommitWritesNothing fails the transaction's commit: no
// entry is left, and the number is given again to the next commit.
func TestOutboxFailedCommitWritesNothing(t *testing.T) {
	s := mustOpen(t, Config{Outbox: true})
	disk := errors.New("disk full")
	s.commit = func(tx *bolt.Tx) error { tx.Rollback(); return disk }
	if err := s.Commit(outboxBatch(1)); !errors.Is(err, disk) {
		t.Fatalf("Commit = %v", err)
	}
	if st, _ := s.Outbox().Stats(); st.Entries != 0 || st.LastSeq != 0 {
		t.Errorf("after a failed commit: %+v", st)
	}
	s.commit = (*bolt.Tx).Commit
	if err := s.Commit(outboxBatch(1)); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := s.Outbox().Next(0); !ok || e.Seq != 1 {
		t.Errorf("first entry = %d, %v; want 1", e.Seq, ok)
	}
}

// TestOutboxOff: without Config.Outbox commits write no entry.
func TestOutboxOff(t *testing.T) {
	s := mustOpen(t, Config{})
	if err := s.Commit(outboxBatch(1)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Outbox().Next(0); ok || err != nil {
		t.Errorf("Next = %v, %v; want nothing", ok, err)
	}
}
