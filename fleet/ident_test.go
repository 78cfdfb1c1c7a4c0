package fleet

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/tally"
)

// testIdents registers the test nodes and keeps the checksums of the
// batches they applied, so that apply can name each batch's parent as a
// node's shipping does.
var testIdents struct {
	sync.Mutex
	registered map[*Store]map[string]bool
	sums       map[string]logtally.EntrySum // url, node and number -> sum
}

// testIdent is the identity of the test node called name: the same for
// every store of a test.
func testIdent(name string) Ident {
	h := sha256.Sum256([]byte("test node " + name))
	return Ident{ID: [16]byte(h[:16]), Name: name}
}

// sumKey keys the sum of batch seq of node in the database s is on.
func sumKey(s *Store, node string, seq uint64) string {
	return fmt.Sprintf("%s\x00%s\x00%d", s.cfg.URL, node, seq)
}

// apply applies b as batch seq of the test node called node, registered
// on first use, with the checksum of its encoding and its parent the batch
// applied before it as seq-1.
func apply(ctx context.Context, s *Store, node string, seq uint64, b *tally.Batch) (bool, error) {
	id := testIdent(node)
	testIdents.Lock()
	if testIdents.registered == nil {
		testIdents.registered = map[*Store]map[string]bool{}
		testIdents.sums = map[string]logtally.EntrySum{}
	}
	if testIdents.registered[s] == nil {
		testIdents.registered[s] = map[string]bool{}
	}
	done := testIdents.registered[s][node]
	parent := testIdents.sums[sumKey(s, node, seq-1)]
	testIdents.Unlock()
	if !done {
		if _, _, err := s.Register(ctx, id, false); err != nil {
			return false, err
		}
		testIdents.Lock()
		testIdents.registered[s][node] = true
		testIdents.Unlock()
	}
	enc, err := b.MarshalBinary()
	if err != nil {
		return false, err
	}
	sum := logtally.OutboxEntry{Batch: enc}.Sum()
	applied, err := s.Apply(ctx, id, Entry{Seq: seq, Sum: sum, Parent: parent, Batch: b})
	if err == nil {
		testIdents.Lock()
		testIdents.sums[sumKey(s, node, seq)] = sum
		testIdents.Unlock()
	}
	return applied, err
}
