package ingest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/logtally/logtally/parser"
)

// The first lines read tell whether the format fits: a log in another
// format than the one given is rejected line after line, and a replay that
// committed past those lines would leave nothing for a second replay with
// the right format to read.
const (
	// JudgeLines is how many lines the verdict waits for (counted by whole
	// chunks), unless the input ends first.
	JudgeLines = 10_000
	// judgeEarly is how many lines, all of them rejected, are enough for a
	// verdict before JudgeLines.
	judgeEarly = 100
)

// ErrMostlyRejected means that more than half of the first lines read were
// rejected: the log is most likely not in the format given.
var ErrMostlyRejected = errors.New("most lines were rejected")

// FormatError is the verdict that the lines read are not in the format
// given: what was rejected, and a preset the rejected lines parse with, if
// one does.
type FormatError struct {
	Lines, Rejected int64
	ByReason        map[string]int64
	Suggest         string // a --format preset that parses the rejected lines; empty if none does
}

func (e *FormatError) Error() string {
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(e.ByReason)) {
		if n := e.ByReason[r]; n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s: %d", r, n))
		}
	}
	msg := fmt.Sprintf("%d of the first %d lines were rejected (%s): is the log format right? (--format, --nginx-conf)",
		e.Rejected, e.Lines, strings.Join(reasons, ", "))
	if e.Suggest != "" {
		msg += "; the rejected lines parse with --format " + e.Suggest
	}
	return msg
}

// Unwrap makes a FormatError an ErrMostlyRejected.
func (e *FormatError) Unwrap() error { return ErrMostlyRejected }

// suggestOrder is the order in which presets are tried on rejected lines.
var suggestOrder = []string{"combined", "main", "common", "vhost_combined"}

// Judge gives, once, the verdict on the first lines read: a FormatError
// if more than half of them were rejected. It waits for JudgeLines lines
// (or the end of the input, when final), unless more than half of
// JudgeLines are rejected already; with early (run, which has no end to
// wait for on a quiet site), judgeEarly lines all rejected are enough. It
// reports whether the verdict is in.
func (c *Core) Judge(final, early bool) (bool, *FormatError) {
	if c.judged {
		return true, nil
	}
	lines, rejected := c.Lines(), c.Rejected()
	sure := rejected*2 > JudgeLines || early && lines >= judgeEarly && rejected == lines
	if !final && lines < JudgeLines && !sure {
		return false, nil
	}
	c.judged = true
	if rejected*2 <= lines {
		return true, nil
	}
	return true, &FormatError{Lines: lines, Rejected: rejected, ByReason: c.RejectedBy(), Suggest: suggest(c.Samples())}
}

// suggest returns the preset that parses the most samples, if one parses
// more than half of them: a log in another format has bad lines too.
func suggest(samples []Sample) string {
	var rec parser.Record
	best, most := "", len(samples)/2
	for _, name := range suggestOrder {
		f, err := parser.New(name)
		if err != nil {
			continue
		}
		n := 0
		for _, s := range samples {
			if f.Parse([]byte(s.Line), &rec) == nil {
				n++
			}
		}
		if n > most {
			best, most = name, n
		}
	}
	return best
}

// Judged reports whether the verdict on the first lines is in (see Judge).
func (c *Core) Judged() bool { return c.judged }
