package tailer

import (
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func collect(t *testing.T, path string, offset int64) (string, int64) {
	t.Helper()
	out := make(chan Chunk, 16)
	errc := make(chan error, 1)
	go func() { errc <- Read(context.Background(), path, offset, out); close(out) }()
	var sb strings.Builder
	var last int64
	for c := range out {
		sb.Write(c.Data)
		last = c.Offset
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return sb.String(), last
}

func TestReadPlainAndResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(path, []byte("one\ntwo\nthree\npartial"), 0o644)
	got, off := collect(t, path, 0)
	if got != "one\ntwo\nthree\n" || off != 14 {
		t.Fatalf("Read = %q at %d, want three lines at 14", got, off)
	}
	got, off = collect(t, path, 4)
	if got != "two\nthree\n" || off != 14 {
		t.Fatalf("Read from 4 = %q at %d", got, off)
	}
}

func TestReadLargeSpansChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	line := strings.Repeat("x", 99) + "\n"
	want := strings.Repeat(line, 3*ChunkSize/len(line)+7)
	os.WriteFile(path, []byte(want), 0o644)
	got, off := collect(t, path, 0)
	if got != want || off != int64(len(want)) {
		t.Fatalf("Read lost or duplicated data: got %d bytes at %d, want %d", len(got), off, len(want))
	}
}

func TestReadGzip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log.1.gz")
	f, _ := os.Create(path)
	zw := gzip.NewWriter(f)
	zw.Write([]byte("one\ntwo\n"))
	zw.Close()
	f.Close()
	got, off := collect(t, path, 4)
	if got != "two\n" || off != 8 {
		t.Fatalf("Read gz from 4 = %q at %d, want \"two\\n\" at 8", got, off)
	}
}

func TestFollowAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(path, []byte("old\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan Chunk, 16)
	go Follow(ctx, path, 4, out, 5*time.Millisecond, nil)

	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("new1\nnew2\n")
	f.Close()

	var got string
	var off int64
	deadline := time.After(10 * time.Second)
	for got != "new1\nnew2\n" {
		select {
		case c := <-out:
			got += string(c.Data)
			off = c.Offset
		case <-deadline:
			t.Fatalf("followed %q, want the two new lines", got)
		}
	}
	if off != 14 {
		t.Errorf("offset = %d, want 14", off)
	}
}
