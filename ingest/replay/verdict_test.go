package replay

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/logtally/logtally/ingest"
	"github.com/logtally/logtally/ingest/internal/ingesttest"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
)

// committed reports whether the store holds anything of the replay: a
// position.
func committed(store *storage.Store) bool {
	_, a, _ := store.Position("a")
	_, b, _ := store.Position("b")
	return a || b
}

// TestReplayInTheWrongFormatFails: a replay whose lines are all rejected
// fails with a hint, naming the preset they parse with, and commits
// nothing, so that a second replay with the right format reads them all.
func TestReplayInTheWrongFormatFails(t *testing.T) {
	store := ingesttest.Store(t)
	format, err := parser.New("main")
	if err != nil {
		t.Fatal(err)
	}
	_, classifier := ingesttest.Combined(t)
	r, err := New(Config{}, Deps{Deps: ingest.Deps{Format: format, Classifier: classifier}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Replay(context.Background(), ingesttest.Feed(ingesttest.Chunks(301, 4096)...))
	var fe *ingest.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ingest.ErrMostlyRejected) {
		t.Fatalf("Replay = %v, want a FormatError", err)
	}
	if fe.Lines != 301 || fe.Rejected != 301 || fe.Suggest != "combined" {
		t.Errorf("FormatError = %+v, want 301 of 301 rejected, and combined suggested", fe)
	}
	want := "301 of the first 301 lines were rejected (line does not match format: 301): is the log format right? (--format, --nginx-conf); the rejected lines parse with --format combined"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant\n%s", err, want)
	}
	if committed(store) {
		t.Error("a failed replay committed positions: a replay with the right format would skip the lines")
	}
}

// TestReplayMostlyRejectedFails: more than half of the first 10,000 lines
// rejected is a failure, however the rest parse; fewer is not.
func TestReplayMostlyRejectedFails(t *testing.T) {
	all := ingesttest.Chunks(20_000, 4096)
	mixed := func(bad int) []tailer.Chunk {
		var cs []tailer.Chunk
		for i, c := range ingesttest.Chunks(20_000, 4096) {
			if i*100 < bad*len(all) {
				c.Data = bytes.ReplaceAll(c.Data, []byte("] \""), []byte("] ")) // the request is not quoted
			}
			cs = append(cs, c)
		}
		return cs
	}
	r, store := newReplayer(t, Config{})
	if err := r.Replay(context.Background(), ingesttest.Feed(mixed(30)...)); !errors.Is(err, ingest.ErrMostlyRejected) {
		t.Errorf("60%% of the first 10,000 lines rejected: Replay = %v, want ErrMostlyRejected", err)
	}
	if committed(store) {
		t.Error("the failed replay committed")
	}
	r, store = newReplayer(t, Config{})
	if err := r.Replay(context.Background(), ingesttest.Feed(mixed(20)...)); err != nil {
		t.Errorf("40%% of the first 10,000 lines rejected: Replay = %v, want it to succeed", err)
	}
	if !committed(store) {
		t.Error("a replay that succeeded committed nothing")
	}
}
