package tailer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// replayed is what a Reader sent of a file: its lines of up to max bytes
// in order, how many were longer (skipped, or sent for the parser to turn
// away), where it ended, and the bytes it says it read.
type replayed struct {
	lines []string
	long  int
	end   int64
	bytes int64
}

func replayAs(t *testing.T, r *Reader, path string, offset int64) replayed {
	t.Helper()
	out := make(chan Chunk, 4)
	var got replayed
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range out {
			got.long += c.Skipped
			for l := range strings.Lines(string(c.Data)) {
				if len(l)-1 > r.MaxLine {
					got.long++
				} else {
					got.lines = append(got.lines, l)
				}
			}
			got.end = c.Offset
			c.Release()
		}
	}()
	end, err := r.Read(context.Background(), path, "f", offset, out)
	close(out)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if got.end != 0 && got.end != end {
		t.Fatalf("last chunk ends at %d, Read at %d", got.end, end)
	}
	got.end, got.bytes = end, r.Bytes.Load()
	return got
}

// TestMappedEqualsRead: a plain file replayed from its mapping gives the
// lines that reading it into buffers gives, from any offset: lines shorter
// and longer than a chunk, lines longer than the longest kept, and a last
// line without its newline, which neither sends.
func TestMappedEqualsRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 40 {
		var b strings.Builder
		var starts []int64
		for i := range 1 + rng.IntN(300) {
			starts = append(starts, int64(b.Len()))
			n := rng.IntN(40)
			if rng.IntN(10) == 0 {
				n = rng.IntN(400) // longer than a buffer, or than the longest kept
			}
			fmt.Fprintf(&b, "%d %s\n", i, strings.Repeat("x", n))
		}
		if rng.IntN(2) == 0 {
			b.WriteString("a last line, not whole yet")
		}
		path := filepath.Join(t.TempDir(), "access.log")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		offset := starts[rng.IntN(len(starts))]
		size, max := 16+rng.IntN(100), 20+rng.IntN(200)
		read := replayAs(t, &Reader{BufSize: size, MaxLine: max, noMap: true}, path, offset)
		mapped := replayAs(t, &Reader{BufSize: size, MaxLine: max}, path, offset)
		if !slices.Equal(mapped.lines, read.lines) || mapped.long != read.long || mapped.end != read.end ||
			mapped.bytes != read.bytes {
			t.Fatalf("round %d (chunks of %d, lines of at most %d, from %d):\nmapped %d lines, %d long, end %d, %d bytes\n"+
				"  read %d lines, %d long, end %d, %d bytes", round, size, max, offset, len(mapped.lines), mapped.long,
				mapped.end, mapped.bytes, len(read.lines), read.long, read.end, read.bytes)
		}
	}
}

// TestMappedFileTruncated: a mapped file that shrinks while it is
// replayed makes a read of its chunks' lost pages, in ReadMapped, and the
// replay itself, fail with ErrTruncated, rather than crash.
func TestMappedFileTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(strings.Repeat(strings.Repeat("y", 99)+"\n", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := make(chan Chunk) // the reader waits for each chunk to be taken
	errc := make(chan error, 1)
	go func() {
		errc <- (&Reader{BufSize: 4096, MaxLine: 200}).Replay(context.Background(), []string{path}, newSink().positions, out)
	}()
	first := <-out
	if first.mapped == nil {
		t.Skip("the file was read, not mapped: nothing to truncate under a mapping")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var sum int
	err := ReadMapped(func() {
		for _, c := range first.Data {
			sum += int(c)
		}
	})
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("reading a chunk of a truncated file: %v (sum %d), want ErrTruncated", err, sum)
	}
	for {
		select {
		case c := <-out:
			c.Release() // not read: its pages are gone
		case err := <-errc:
			if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), path) {
				t.Errorf("Replay of a file truncated under it = %v, want ErrTruncated naming it", err)
			}
			return
		}
	}
}

// ReadMapped lets any other panic go on.
func TestReadMappedOtherPanics(t *testing.T) {
	defer func() {
		if p := recover(); p != "not a fault" {
			t.Errorf("recovered %v, want the panic itself", p)
		}
	}()
	ReadMapped(func() { panic("not a fault") })
}
