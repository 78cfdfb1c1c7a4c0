package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/internal/loggen"
	"github.com/logtally/logtally/parser"
)

// hit is what one written line counts for, as the daemon's own parser and
// classifier (with their default settings) see it: the truth.
type hit struct {
	sec      int64 // unix second of the line
	bytes    int64
	visitor  uint64 // set for page views only
	pageView bool
}

// writer appends generated lines to the log at a steady rate, rotates it,
// and remembers every line it wrote. Lines are stamped by a synthetic clock
// that advances one step per line from the moment writing began (plus the
// source's lead), so a line is never ahead of the wall clock (plus the
// lead) when it is written.
type writer struct {
	path string

	// mu guards the file, the generator and the truth: a rotation never
	// falls in the middle of a write.
	mu      sync.Mutex
	f       *os.File
	gen     *loggen.Generator
	start   time.Time
	rate    int
	written int64
	hits    []hit
	judge   judge
	edit    lineEdit // nil: the generator's lines as they are
	odd     oddities
	buf     []byte
	err     error // first write error; writing stops

	// rot is held by whatever renames the log's files (a rotation, a gzip)
	// or needs them to keep their names (a replay).
	rot sync.Mutex
}

// judge tells what a line counts for, as the daemon's own parser and
// classifier (with their default settings) see it.
type judge struct {
	format *parser.Format
	rules  *classify.Classifier
	rec    parser.Record
}

func newJudge() (judge, error) {
	format, err := parser.New("combined")
	if err != nil {
		return judge{}, err
	}
	// The key only changes the visitors' hashes, not which are distinct.
	rules, err := classify.New(classify.DefaultConfig(), classify.Fixed{})
	if err != nil {
		return judge{}, err
	}
	return judge{format: format, rules: rules}, nil
}

// hit returns what line counts for, and its path if that holds a byte
// nginx logs as \xHH (as the daemon stores and shows it), else "".
func (j *judge) hit(line []byte) (hit, string, error) {
	if err := j.format.Parse(line, &j.rec); err != nil {
		return hit{}, "", fmt.Errorf("the generator wrote a line the parser rejects (%v): %q", err, line)
	}
	h := j.rules.Classify(&j.rec)
	raw := ""
	if bytes.Contains(h.Path, []byte(`\x`)) {
		raw = string(h.Path)
	}
	return hit{sec: h.Time, bytes: h.Bytes, visitor: h.Visitor, pageView: h.PageView}, raw, nil
}

// source is what a writer writes: the generator's seed, lines a second,
// how far ahead of the wall clock lines are dated (a node whose clock
// runs fast), and an edit of some lines, if any.
type source struct {
	seed uint64
	rate int
	lead time.Duration
	edit lineEdit
}

// lineEdit returns line n (from 0) of a log as it is to be written, which
// may be line itself, and whether the daemon refuses it (counts it in no
// minute, only as rejected). It must not write into line.
type lineEdit func(n int64, line []byte) (out []byte, refused bool)

// oddities counts the lines a writer's edit made odd.
type oddities struct {
	refused  int64            // lines the daemon refuses
	raw      int64            // lines whose path holds a raw byte (\xHH)
	rawViews map[string]int64 // their page views, by path as the daemon shows it
}

func newWriter(path string, src source, start time.Time) (*writer, error) {
	j, err := newJudge()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	gen := loggen.New(loggen.Config{Seed: src.seed, Start: start.Add(src.lead), Step: time.Second / time.Duration(src.rate),
		Hosts: 3000, Paths: 60})
	return &writer{path: path, f: f, gen: gen, start: start, rate: src.rate, judge: j, edit: src.edit,
		odd: oddities{rawViews: map[string]int64{}}}, nil
}

// writeDue writes every line due by now: line k is due, and stamped, at
// start + k/rate.
func (w *writer) writeDue(now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	due := int64(now.Sub(w.start)) * int64(w.rate) / int64(time.Second)
	w.buf = w.buf[:0]
	for n := w.written; n < due; n++ {
		if err := w.line(n); err != nil {
			w.err = err
			return w.err
		}
	}
	if len(w.buf) == 0 {
		return nil
	}
	// One write(2) of whole lines: a reader never sees half of one.
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
		return w.err
	}
	w.written = due
	return nil
}

// line appends line n to w.buf and what it counts for to the truth.
func (w *writer) line(n int64) error {
	from := len(w.buf)
	w.buf = w.gen.Line(w.buf)
	if w.edit != nil {
		out, refused := w.edit(n, w.buf[from:])
		w.buf = append(w.buf[:from], out...)
		if refused {
			w.odd.refused++
			return nil
		}
	}
	h, raw, err := w.judge.hit(w.buf[from:])
	if err != nil {
		return err
	}
	w.hits = append(w.hits, h)
	if raw != "" {
		w.odd.raw++
		if h.pageView {
			w.odd.rawViews[raw]++
		}
	}
	return nil
}

// run writes until stop is closed, every tick.
func (w *writer) run(stop <-chan struct{}, tick time.Duration) error {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return w.writeDue(time.Now())
		case now := <-t.C:
			if err := w.writeDue(now); err != nil {
				return err
			}
		}
	}
}

// truth returns the lines written so far and what they count for.
func (w *writer) truth() (int64, []hit) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written, slices.Clone(w.hits)
}

// oddities returns what the edit made odd so far.
func (w *writer) oddities() oddities {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.odd
	o.rawViews = maps.Clone(o.rawViews)
	return o
}

// rotated is one rotated copy of the log: PATH.N or PATH.N.gz.
type rotated struct {
	n  int
	gz bool
}

func (w *writer) name(r rotated) string {
	s := w.path + "." + strconv.Itoa(r.n)
	if r.gz {
		s += ".gz"
	}
	return s
}

// copies lists the rotated copies, newest (lowest number) first.
func (w *writer) copies() ([]rotated, error) {
	names, err := filepath.Glob(w.path + ".*")
	if err != nil {
		return nil, err
	}
	var out []rotated
	for _, name := range names {
		rest := strings.TrimPrefix(name, w.path+".")
		gz := strings.HasSuffix(rest, ".gz")
		n, err := strconv.Atoi(strings.TrimSuffix(rest, ".gz"))
		if err != nil {
			continue // a temporary file of a gzip
		}
		out = append(out, rotated{n, gz})
	}
	slices.SortFunc(out, func(a, b rotated) int { return a.n - b.n })
	return out, nil
}

// rotate does what logrotate does: every PATH.N becomes PATH.N+1, then the
// log becomes PATH.1, either renamed (and a new log created, which the
// writer opens at once, as nginx does on reopen) or copied and truncated
// in place. Nothing is ever deleted, so that nothing is lost by design.
func (w *writer) rotate(copytruncate bool) error {
	w.rot.Lock()
	defer w.rot.Unlock()
	cs, err := w.copies()
	if err != nil {
		return err
	}
	for _, r := range slices.Backward(cs) {
		if err := os.Rename(w.name(r), w.name(rotated{r.n + 1, r.gz})); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	first := w.name(rotated{n: 1})
	if copytruncate {
		data, err := os.ReadFile(w.path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(first, data, 0o644); err != nil {
			return err
		}
		// The writer's descriptor is in append mode: its next line goes to
		// the start of the truncated file, as nginx's would.
		if err := w.f.Truncate(0); err != nil {
			return err
		}
		return nil
	}
	if err := os.Rename(w.path, first); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	w.f.Close()
	w.f = f
	return nil
}

// gzip compresses the uncompressed rotated copies numbered from min on,
// keeping each file's modification time as gzip(1) and logrotate do, and
// returns how many it compressed.
func (w *writer) gzip(min int) (int, error) {
	w.rot.Lock()
	defer w.rot.Unlock()
	cs, err := w.copies()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range cs {
		if r.gz || r.n < min {
			continue
		}
		if err := gzipFile(w.name(r), w.name(rotated{r.n, true})); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func gzipFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	fi, err := os.Stat(from)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Name = filepath.Base(from)
	zw.ModTime = fi.ModTime()
	if _, err := io.Copy(zw, bytes.NewReader(data)); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		return err
	}
	if err := os.Rename(tmp, to); err != nil {
		return err
	}
	return os.Remove(from)
}

func (w *writer) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}
