package ingest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/tailer"
)

// withFormat gives p another format.
func withFormat(t *testing.T, p *Pipeline, name string) {
	t.Helper()
	f, err := parser.New(name)
	if err != nil {
		t.Fatal(err)
	}
	p.format = f
}

// committed reports whether the store holds anything of the replay: a
// position or a minute.
func committed(t *testing.T, p *Pipeline) bool {
	t.Helper()
	s := p.store.(interface {
		Position(string) (int64, bool, error)
	})
	_, a, _ := s.Position("a")
	_, b, _ := s.Position("b")
	return a || b
}

// TestReplayInTheWrongFormatFails: a replay whose lines are all rejected
// fails with a hint, naming the preset they parse with, and commits
// nothing, so that a second replay with the right format reads them all.
func TestReplayInTheWrongFormatFails(t *testing.T) {
	p, _ := newPipeline(t)
	withFormat(t, p, "main")
	err := p.Replay(context.Background(), feed(chunks(301, 4096)))
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrMostlyRejected) {
		t.Fatalf("Replay = %v, want a FormatError", err)
	}
	if fe.Lines != 301 || fe.Rejected != 301 || fe.Suggest != "combined" {
		t.Errorf("FormatError = %+v, want 301 of 301 rejected, and combined suggested", fe)
	}
	want := "301 of the first 301 lines were rejected (line does not match format: 301): is the log format right? (--format, --nginx-conf); the rejected lines parse with --format combined"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant\n%s", err, want)
	}
	if committed(t, p) {
		t.Error("a failed replay committed positions: a replay with the right format would skip the lines")
	}
}

// TestReplayMostlyRejectedFails: more than half of the first 10,000 lines
// rejected is a failure, however the rest parse; fewer is not.
func TestReplayMostlyRejectedFails(t *testing.T) {
	mixed := func(bad int) []tailer.Chunk {
		var cs []tailer.Chunk
		for i, c := range chunks(20_000, 4096) {
			if i*100 < bad*len(chunksOf20k) {
				c.Data = bytes.ReplaceAll(c.Data, []byte("] \""), []byte("] ")) // the request is not quoted
			}
			cs = append(cs, c)
		}
		return cs
	}
	p, _ := newPipeline(t)
	if err := p.Replay(context.Background(), feed(mixed(30))); !errors.Is(err, ErrMostlyRejected) {
		t.Errorf("60%% of the first 10,000 lines rejected: Replay = %v, want ErrMostlyRejected", err)
	}
	if committed(t, p) {
		t.Error("the failed replay committed")
	}
	p, _ = newPipeline(t)
	if err := p.Replay(context.Background(), feed(mixed(20))); err != nil {
		t.Errorf("40%% of the first 10,000 lines rejected: Replay = %v, want it to succeed", err)
	}
	if !committed(t, p) {
		t.Error("a replay that succeeded committed nothing")
	}
}

var chunksOf20k = chunks(20_000, 4096)

// TestRunLogsFormatHintOnce: run keeps following, and logs the same hint
// once.
func TestRunLogsFormatHintOnce(t *testing.T) {
	p, _ := newPipeline(t)
	withFormat(t, p, "main")
	var log bytes.Buffer
	p.log = slog.New(slog.NewTextHandler(&log, nil))
	cs := chunks(1_000, 4096)
	in := make(chan tailer.Chunk, len(cs))
	for _, c := range cs {
		in <- c
	}
	close(in)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Run(ctx, in); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "most lines are rejected"); n != 1 ||
		!strings.Contains(log.String(), "parse with --format combined") {
		t.Errorf("log has the hint %d times, want once:\n%s", n, log.String())
	}
}
