package fleet

import (
	"context"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/pgtest"
	"github.com/logtally/logtally/tally"
)

// entries returns batches as the run of entries first, first+1, ... of a
// node, each naming the one before as its parent; parent is the checksum
// of entry first-1.
func entries(t *testing.T, first uint64, parent logtally.EntrySum, batches []*tally.Batch) []Entry {
	t.Helper()
	es := make([]Entry, len(batches))
	for i, b := range batches {
		enc, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		sum := logtally.OutboxEntry{Batch: enc}.Sum()
		es[i] = Entry{Seq: first + uint64(i), Sum: sum, Parent: parent, Batch: b}
		parent = sum
	}
	return es
}

// TestApplyEntriesCoalesced ships two nodes' batches several to a
// transaction, in runs that overlap what was applied before, as a node
// catching up after a lost reply sends them: each batch counts once, and
// every read matches a brute-force count of the lines.
func TestApplyEntriesCoalesced(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := open(t, pgtest.Database(t), "a", time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(5, 6)), 2, 6, 300)
	all := [][]Entry{entries(t, 1, logtally.EntrySum{}, w.batches[0]), entries(t, 1, logtally.EntrySum{}, w.batches[1])}
	for n := range all {
		if _, _, err := s.Register(ctx, testIdent(nodeName(n)), false); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		node, from, to int // entries from..to (1-based, inclusive)
		want           int
	}{
		{0, 1, 2, 2},
		{1, 1, 1, 1},
		{0, 2, 4, 2}, // 2 was applied: 3 and 4 are
		{1, 2, 6, 5},
		{0, 1, 4, 0}, // all applied before
		{0, 4, 4, 0},
		{0, 5, 6, 2},
	} {
		got, err := s.ApplyEntries(ctx, testIdent(nodeName(step.node)), all[step.node][step.from-1:step.to])
		if got != step.want || err != nil {
			t.Fatalf("ApplyEntries %s/%d-%d = %d, %v; want %d, nil", nodeName(step.node), step.from, step.to, got, err, step.want)
		}
	}
	checkAgainstTruth(t, s, w.lines)
}

// TestApplyEntriesRefusesBrokenRuns checks that a run with a hole, or an
// entry that does not name the one before as its parent, is refused
// before anything is written.
func TestApplyEntriesRefusesBrokenRuns(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := open(t, pgtest.Database(t), "a", time.Unix(t0+3600, 0))
	w := generate(rand.New(rand.NewPCG(7, 8)), 1, 3, 50)
	es := entries(t, 1, logtally.EntrySum{}, w.batches[0])
	id := testIdent("a")
	if _, _, err := s.Register(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	before := snapshotTables(t, s)
	hole := []Entry{es[0], es[2]}
	orphan := []Entry{es[0], es[1]}
	orphan[1].Parent = logtally.EntrySum{1}
	for name, run := range map[string][]Entry{"hole": hole, "orphan": orphan, "empty": nil} {
		if n, err := s.ApplyEntries(ctx, id, run); n != 0 || err == nil {
			t.Errorf("%s: ApplyEntries = %d, %v; want an error", name, n, err)
		}
	}
	if after := snapshotTables(t, s); !maps.Equal(after, before) {
		t.Errorf("broken runs changed the tables")
	}
	if n, err := s.ApplyEntries(context.Background(), id, es); n != 3 || err != nil {
		t.Errorf("ApplyEntries of the whole run = %d, %v; want 3, nil", n, err)
	}
}
