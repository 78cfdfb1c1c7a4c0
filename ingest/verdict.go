package ingest

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
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
	// Extra, when the rejected lines are combined lines with more after
	// them, and what follows is no X-Forwarded-For list (which --format
	// main would read it as), is that text, of one of them.
	Extra string
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
	if e.Extra != "" {
		msg += fmt.Sprintf("; the rejected lines are combined lines followed by '%s': give the whole format, such as --format '%s %s' if that is the host, "+
			"or read it from nginx with --nginx-conf", e.Extra, parser.Combined, hostExample(e.Extra))
	}
	return msg
}

// hostExample is how a format would log the host where extra is: quoted
// or not.
func hostExample(extra string) string {
	if strings.HasPrefix(strings.TrimSpace(extra), `"`) {
		return `"$host"`
	}
	return "$host"
}

// Unwrap makes a FormatError an ErrMostlyRejected.
func (e *FormatError) Unwrap() error { return ErrMostlyRejected }

// suggestOrder is the order in which presets are tried on rejected lines.
// main is combined with "$http_x_forwarded_for" after it: it is suggested
// by what follows a combined line (see afterCombined), not by parsing,
// since it would read any quoted field there, a host as well, as the
// forwarded-for list.
var suggestOrder = []string{"combined", "common", "vhost_combined"}

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
	fe := &FormatError{Lines: lines, Rejected: rejected, ByReason: c.RejectedBy()}
	fe.Suggest, fe.Extra = suggest(c.Samples())
	return true, fe
}

// suggest returns the preset that parses the most samples, if one parses
// more than half of them: a log in another format has bad lines too. When
// more than half are combined lines with more after them, it returns main
// if that is a forwarded-for list, and otherwise what follows (extra).
func suggest(samples []Sample) (preset, extra string) {
	if combined, err := parser.New("combined"); err == nil {
		n := 0
		for _, s := range samples {
			if rest, ok := afterCombined(combined, s.Line); ok {
				n++
				if extra == "" {
					extra = rest
				}
			}
		}
		switch {
		case n <= len(samples)/2:
			extra = ""
		case forwardedFor(extra):
			return "main", ""
		default:
			return "", extra
		}
	}
	return parsedBy(samples), ""
}

// afterCombined returns what follows the combined line that line starts
// with, if it does: the text from the space after a closing quote that
// ends a line combined parses.
func afterCombined(combined *parser.Format, line string) (string, bool) {
	var rec parser.Record
	for i := 1; i < len(line); i++ {
		if line[i] == ' ' && line[i-1] == '"' && combined.Parse([]byte(line[:i]), &rec) == nil {
			return line[i:], true
		}
	}
	return "", false
}

// forwardedFor reports whether extra is one quoted field that reads as an
// X-Forwarded-For header: "-", or addresses separated by commas (masked to
// their network in a redacted sample).
func forwardedFor(extra string) bool {
	if !strings.HasPrefix(extra, ` "`) || !strings.HasSuffix(extra, `"`) || len(extra) < 3 {
		return false
	}
	field := extra[2 : len(extra)-1]
	if strings.Contains(field, `"`) {
		return false
	}
	if field == "-" {
		return true
	}
	for _, a := range strings.Split(field, ",") {
		a = strings.TrimSpace(a)
		_, errAddr := netip.ParseAddr(a)
		_, errPrefix := netip.ParsePrefix(a)
		if errAddr != nil && errPrefix != nil {
			return false
		}
	}
	return true
}

// parsedBy returns the preset of suggestOrder that parses the most
// samples, if one parses more than half of them.
func parsedBy(samples []Sample) string {
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
