package main

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Poison lines (-fleet): nginx logs a raw byte of a request as \xHH, so a
// request for /caf and the byte 0xE9, or one with a NUL, puts bytes that
// are not UTF-8 text in a path. Once, PostgreSQL refused the batch that
// held one (SQLSTATE 22021), and the node retried it for good while every
// later batch waited behind it. The writer makes one line in poisonEvery
// such a request; the check counts their page views by path in the node
// and in the fleet, and a watcher polls that shipping never blocks.

// rawPaths are the poison lines' requests, as nginx logs them: the API
// shows the same text (a raw byte, a control byte or a backslash as \xHH).
var rawPaths = []string{`/caf\xE9`, `/a\x00b`, `/x\x5CxE9`}

// poisonEvery is how often a line is a poison line: about one a second at
// the default -rate.
const poisonEvery = 150

// request is a generated line's request and status.
var request = regexp.MustCompile(`"[A-Z]+ \S* HTTP/1\.1" \d{3} `)

// poison makes every poisonEvery-th line a GET of one of rawPaths, answered
// 200; the rest of the line (address, time, agent) stays as generated, so
// whether it is a page view is the classifier's to say, as for any line.
func poison(n int64, line []byte) ([]byte, bool) {
	if n%poisonEvery != poisonEvery-1 {
		return line, false
	}
	loc := request.FindIndex(line)
	if loc == nil {
		return line, false
	}
	path := rawPaths[int(n/poisonEvery)%len(rawPaths)]
	out := make([]byte, 0, len(line)+len(path))
	out = append(out, line[:loc[0]]...)
	out = append(out, `"GET `+path+` HTTP/1.1" 200 `...)
	return append(out, line[loc[1]:]...), false
}

// pathCheck is one poison path's page views, counted by a scope of the
// daemon (all time) and by the writer.
type pathCheck struct {
	scope, path string
	got, want   int64
}

// checkRawPaths compares the all-time page views of rawPaths, in the node
// and in the fleet, with what the writer wrote. A node whose database was
// restored counts some lines twice (see allowDoubled): its own may exceed
// by that much.
func (s *soak) checkRawPaths(ctx context.Context, want map[string]int64) ([]pathCheck, error) {
	q := url.Values{"path": rawPaths}
	var out []pathCheck
	for _, scope := range []string{"node", "fleet"} {
		q.Set("scope", scope)
		var body struct {
			Pages []struct {
				Path  string `json:"path"`
				Total int64  `json:"total_pageviews"`
			} `json:"pages"`
		}
		code, err := s.api.get(ctx, "/api/v1/pages/count?"+q.Encode(), &body)
		if err == nil && code != 200 {
			err = fmt.Errorf("status %d", code)
		}
		if err != nil {
			return out, fmt.Errorf("page views of the poison paths (scope %s): %w", scope, err)
		}
		for _, p := range body.Pages {
			out = append(out, pathCheck{scope: scope, path: p.Path, got: p.Total, want: want[p.Path]})
		}
	}
	return out, nil
}

// pathsOK reports whether every poison path's page views are right: exact
// in the fleet, and in the node up to allow more.
func pathsOK(checks []pathCheck, allow int64) bool {
	if len(checks) != 2*len(rawPaths) {
		return false
	}
	for _, c := range checks {
		diff := c.got - c.want
		if c.scope == "fleet" && diff != 0 || diff < 0 || diff > allow {
			return false
		}
	}
	return true
}

// describePaths says in one line what checkRawPaths found.
func describePaths(checks []pathCheck) string {
	var parts []string
	for _, c := range checks {
		parts = append(parts, fmt.Sprintf("%s %s %d/%d", c.scope, c.path, c.got, c.want))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// blockWatch is what watchBlocked saw of the nodes' shipping states.
type blockWatch struct {
	polls   int
	blocked int
	last    string // the last error of the last blocked state seen
}

// watchBlocked polls the nodes' /api/v1/status every 250 ms until stop is
// closed, and reports any state "blocked": an error shipping cannot get
// past without someone's fix, which no line of the soak may cause.
func (s *soak) watchBlocked(stop <-chan struct{}, apis ...*api) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
		for _, a := range apis {
			var st fleetStatus
			if code, err := a.get(ctx, "/api/v1/status", &st); err != nil || code != 200 || st.Fleet == nil {
				continue // down meanwhile
			}
			s.mu.Lock()
			s.blocks.polls++
			first := false
			if st.Fleet.State == "blocked" {
				first = s.blocks.blocked == 0
				s.blocks.blocked++
				s.blocks.last = st.Fleet.LastError
			}
			s.mu.Unlock()
			if first {
				s.problem("shipping blocked (%s): %s", a.base, st.Fleet.LastError)
			}
		}
	}
}
