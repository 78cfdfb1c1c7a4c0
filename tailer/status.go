package tailer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// problem is why nothing is read from a path: it matches no file, or the
// file cannot be opened. It is logged when it starts and then at most once
// every ProblemLogInterval while it lasts.
type problem struct {
	state  string // "missing" or "unreadable"
	err    error  // why a file is unreadable
	warned time.Time
}

// ProblemLogInterval is how often a path that stays missing or unreadable
// is logged again: each re-scan finds it, and once a re-scan is enough to
// fill a log.
const ProblemLogInterval = time.Minute

// FileStatus is what Files reports of one open file.
type FileStatus struct {
	Path        string
	Fingerprint string // "" until the file's first line is complete
	Offset      int64  // bytes sent to the consumer
	Size        int64
	// State is "following", "rotated" (read until idle or removed),
	// "waiting" (no first line yet), "missing" (a path or glob that
	// matches no file: Path is the pattern) or "unreadable" (a file that
	// cannot be opened: Error says why).
	State string
	// Error is why the file is unreadable; for a file being read, what
	// last went wrong with it (it was truncated).
	Error string
}

// Missing and Unreadable are the states of a path that nothing is read from.
const (
	Missing    = "missing"
	Unreadable = "unreadable"
)

// Files returns the open files as of the last poll. Any goroutine may call
// it; it never waits on Run.
func (t *Tailer) Files() []FileStatus {
	if p := t.status.Load(); p != nil {
		return *p
	}
	return nil
}

// publish records the open files, and the paths nothing is read from, for
// Files.
func (t *Tailer) publish() {
	out := make([]FileStatus, 0, len(t.files)+len(t.problems))
	for _, fl := range t.files {
		// The offset is the read position: from the first poll after a
		// restart it is the committed one, not 0 until a line arrives.
		st := FileStatus{Path: fl.path, Fingerprint: fl.id, Offset: fl.split.off, State: fl.state.String()}
		if fl.id == "" {
			st.State = waiting.String() // a rotated file may still wait for its first line
		}
		if fi, err := fl.f.Stat(); err == nil {
			st.Size = fi.Size()
		}
		if !fl.truncated.IsZero() {
			st.Error = fmt.Sprintf("truncated at %s after %d bytes were read: read again from its start",
				fl.truncated.UTC().Format(time.RFC3339), fl.truncatedOff)
		}
		out = append(out, st)
	}
	for _, p := range slices.Sorted(maps.Keys(t.problems)) {
		st := FileStatus{Path: p, State: t.problems[p].state}
		if err := t.problems[p].err; err != nil {
			st.Error = err.Error()
		}
		out = append(out, st)
	}
	t.status.Store(&out)
}

// report records what is wrong with path (nothing when state is ""), and
// logs it when it starts, when it changes, and then at most once every
// ProblemLogInterval.
func (t *Tailer) report(path, state string, err error) {
	p := t.problems[path]
	if state == "" {
		if p != nil {
			delete(t.problems, path)
			t.log.Info("found", "path", path, "was", p.state)
		}
		return
	}
	now := t.now()
	if p != nil && p.state == state && now.Sub(p.warned) < ProblemLogInterval {
		p.err = err
		return
	}
	t.problems[path] = &problem{state: state, err: err, warned: now}
	switch state {
	case Missing:
		fix := "check the path; the file is read as soon as it appears"
		if hasMeta(path) {
			fix = "check the pattern; files are read as soon as one matches"
		} else if stream := t.rotatedCopyOf(path); stream != "" {
			fix = fmt.Sprintf("it is named as a rotated copy of %s, also given: if the shell expanded an unquoted glob into these FILE arguments, "+
				"quote it ('%s*') so that logtally matches it again as the files rotate (%s alone is followed with its rotated copies)",
				stream, stream, stream)
		}
		t.log.Warn("no file matches", "path", path, "fix", fix)
	case Unreadable:
		fix := readFix
		var nr *NotRegularError
		switch {
		case errors.As(err, &nr) && nr.Mode.IsDir():
			fix = fmt.Sprintf(followDirFix, path)
		case errors.As(err, &nr):
			fix = followFix
		}
		t.log.Warn("cannot read file", "path", path, "err", err, "fix", fix)
	}
}

// rotatedCopyOf returns the plain path among the patterns that path is
// named as a rotated copy of (access.log for access.log.1), or "": what a
// shell gives for an unquoted glob, whose matches are gone after the next
// rotation.
func (t *Tailer) rotatedCopyOf(path string) string {
	for _, p := range t.patterns {
		if p != path && !hasMeta(p) && rotatedName(p, path) {
			return p
		}
	}
	return ""
}

// warn logs msg about path once, and again only after ProblemLogInterval
// while what it is about (kind) goes on happening.
func (t *Tailer) warn(path, kind, msg string, args ...any) {
	key, now := kind+"\x00"+path, t.now()
	if last, ok := t.warned[key]; ok && now.Sub(last) < ProblemLogInterval {
		return
	}
	t.warned[key] = now
	t.log.Warn(msg, args...)
}
