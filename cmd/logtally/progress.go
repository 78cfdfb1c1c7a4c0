package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/logtally/logtally/tailer"
)

// progress draws a progress bar for replay, of the bytes r has read of the
// files' sizes and the lines counted, on w while it is a terminal, and returns the
// function that stops and erases it. Elsewhere (a pipe, a log file, a test)
// it draws nothing: the summary line says it all.
func progress(w io.Writer, files []string, r *tailer.Reader, lines func() int64, start time.Time) (stop func()) {
	var total int64
	for _, path := range files {
		if fi, err := os.Stat(path); err == nil {
			total += fi.Size()
		}
	}
	if !isTerminal(w) || total <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-tick.C:
				fmt.Fprint(w, "\r"+progressLine(r.Bytes.Load(), total, lines(), time.Since(start))+"\033[K")
			}
		}
	}()
	return func() { close(done); <-finished }
}

// progressLine renders bytes read of total, the line rate and the time left.
func progressLine(read, total, lines int64, elapsed time.Duration) string {
	const width = 30
	frac := min(float64(read)/float64(total), 1)
	n := int(frac * width)
	secs := max(elapsed.Seconds(), 1e-9)
	left := "?"
	if read > 0 {
		left = (time.Duration(float64(elapsed) * (float64(total-read) / float64(read)))).Round(time.Second).String()
	}
	return fmt.Sprintf("[%s%s] %3.0f%% %s/%s  %.0f lines/s  %s left",
		strings.Repeat("#", n), strings.Repeat("-", width-n), 100*frac,
		mb(read), mb(total), float64(lines)/secs, left)
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
