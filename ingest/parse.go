package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/breakdown"
	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/counter"
	"github.com/logtally/logtally/parser"
	"github.com/logtally/logtally/tailer"
)

// ErrTooNew is the reason a line dated further ahead of the clock than
// Config.MaxSkew, or of the live window's end, is rejected. Its text is
// window.ErrTooNew's, the window's name for the same reason, so that the
// figures by reason read the same whoever turned the line away; the core
// names it itself so that replay, which keeps no window, does not link
// the window.
var ErrTooNew = errors.New("timestamp too far in the future")

// rejectReasons are the parser reasons, lines too far ahead and the
// tailer's long lines, with a catch-all last.
var rejectReasons = append(append([]error{}, parser.Reasons...), ErrTooNew, tailer.ErrLongLine, errOther)

var (
	errOther    = errors.New("other")
	tooNewIdx   = len(rejectReasons) - 3
	longLineIdx = len(rejectReasons) - 2
)

// reasonIndex returns the index of err's reason in rejectReasons.
func reasonIndex(err error) int {
	for j, reason := range rejectReasons[:len(rejectReasons)-1] {
		if errors.Is(err, reason) {
			return j
		}
	}
	return len(rejectReasons) - 1
}

// defaultSite is the site of lines that name none.
var defaultSite = []byte(logtally.DefaultSite)

// lineParser turns a chunk's lines into hits. It is set in New and only
// read after, so that any goroutine may parse.
type lineParser struct {
	format     *parser.Format
	classifier *classify.Classifier
	matcher    *counter.Matcher // nil without named counters
	breakdowns lineBreakdowns
	maxLine    int
	maxSkew    int64 // seconds
	multi      bool
	byField    bool
	// patternSite is the site name by Chunk.Pattern; nil: by field or
	// default.
	patternSite [][]byte
	now         func() time.Time
}

// patternSites returns the site names of the patterns as bytes, nil for
// none.
func patternSites(names []string) [][]byte {
	out := make([][]byte, len(names))
	for i, name := range names {
		if name != "" {
			out[i] = []byte(name)
		}
	}
	return out
}

// Scratch is what one goroutine parses with, reused from chunk to chunk.
type Scratch struct {
	rec    parser.Record
	memo   classify.Memo
	paths  pathIndex
	bdMemo breakdown.Memo
	bdKeys breakdown.Keys
}

// Parse parses every line of ch into r, using sc. It only reads c's
// settings, so several goroutines may parse at once, each with its own
// Scratch and Result.
//
// A line further ahead of the clock than MaxSkew is rejected here,
// ErrTooNew, whatever the window's end: a replay's window follows the
// lines, so it would otherwise take a line of 2100 and end there.
func (c *Core) Parse(ch tailer.Chunk, sc *Scratch, r *Result) {
	lp := &c.parse
	r.reset(ch, lp.now())
	newest := r.Now.Unix() + lp.maxSkew
	byHost := lp.start(ch, r)
	r.lines = int64(ch.Skipped)
	r.rejected[longLineIdx] = int64(ch.Skipped)
	rec := &sc.rec
	sc.paths.reset()
	if lp.breakdowns.tallied() {
		r.tallies.reset(len(lp.breakdowns.list))
	}
	data := ch.Data
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		r.lines++
		var err error
		if len(line) > lp.maxLine {
			err = tailer.ErrLongLine
		} else if err = lp.format.Parse(line, rec); err == nil {
			if rec.Time.Unix() <= newest {
				h := lp.classifier.ClassifyWith(rec, &sc.memo)
				if rec.PathCopied() {
					h.Path = r.keepPath(h.Path)
				}
				r.Hits = append(r.Hits, h)
				r.pathOf = append(r.pathOf, sc.paths.of(r, &h))
				visited := false // the hit has its visitor
				if lp.matcher != nil {
					visited = lp.match(rec, r)
				}
				if lp.breakdowns.deriver != nil {
					lp.breakdown(rec, r, sc, visited)
				}
				if byHost {
					r.hosts.add(rec.VHost)
				}
				continue
			}
			err = ErrTooNew
		}
		r.reject(line, err)
	}
}

// start returns whether the lines of ch name their own sites (by field),
// and otherwise sets the chunk's site in r: its file's, or the default.
func (lp *lineParser) start(ch tailer.Chunk, r *Result) (byHost bool) {
	if !lp.multi {
		return false
	}
	if ch.Pattern >= 0 && ch.Pattern < len(lp.patternSite) {
		r.siteName = lp.patternSite[ch.Pattern]
	}
	if r.siteName == nil {
		if !lp.byField {
			r.siteName = defaultSite
		}
		return lp.byField
	}
	return false
}

// match records the counters the last hit of r counts, with copies of
// their keys (the record's fields are reused by the next line): one Match
// for each key, with the set of counters that count the line under it
// (Match.Counters), so that the line is counted once for them all. A
// counted line that is not a page view is given its visitor, which
// counters count.
func (lp *lineParser) match(rec *parser.Record, r *Result) (visited bool) {
	r.scratch = lp.matcher.Match(rec.Method, rec.Path, rec.Status, r.scratch[:0])
	if len(r.scratch) == 0 {
		return false
	}
	i := len(r.Hits) - 1
	if h := &r.Hits[i]; !h.PageView {
		h.Visitor = lp.classifier.Visitor(rec)
	}
	ms := r.scratch
	for j := range ms {
		if ms[j].Counter < 0 {
			continue // grouped with an earlier one
		}
		start := len(r.keys)
		r.keys = append(r.keys, ms[j].Key...)
		r.setKey = binary.LittleEndian.AppendUint32(r.setKey[:0], uint32(ms[j].Counter))
		for k := j + 1; k < len(ms); k++ {
			if ms[k].Counter >= 0 && bytes.Equal(ms[k].Key, ms[j].Key) {
				r.setKey = binary.LittleEndian.AppendUint32(r.setKey, uint32(ms[k].Counter))
				ms[k].Counter = -1
			}
		}
		r.matches = append(r.matches, Match{hit: int32(i), counter: int32(ms[j].Counter), start: int32(start),
			end: int32(len(r.keys)), set: r.counterSet()})
	}
	return true
}
