package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// TestLastCommitAbsentBeforeTheFirst: before the first commit there is no
// time to give, and 0001-01-01T00:00:00Z would read as a real one.
func TestLastCommitAbsentBeforeTheFirst(t *testing.T) {
	st := Status{Started: time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)}
	s := New(Config{}, Deps{Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} }, Status: func() Status { return st }})
	body := do(s, "GET", "/api/v1/status", nil).Body.String()
	if strings.Contains(body, "last_commit") || strings.Contains(body, "0001-01-01") {
		t.Errorf("before a commit: %s", body)
	}
	st.Store.LastCommit = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var got struct {
		Store struct {
			LastCommit string `json:"last_commit"`
		}
	}
	json.Unmarshal(do(s, "GET", "/api/v1/status", nil).Body.Bytes(), &got)
	if got.Store.LastCommit != "2026-11-21T12:00:00Z" {
		t.Errorf("after a commit: last_commit %q", got.Store.LastCommit)
	}
}

// TestPreflightFromAnOriginNotAllowed is a JSON 403 on the public listener
// that says why, with or without --cors-origin, and never the CORS headers.
func TestPreflightFromAnOriginNotAllowed(t *testing.T) {
	snap := func() *logtally.Snapshot { return &logtally.Snapshot{} }
	for _, cfg := range []Config{{}, {CORSOrigins: []string{"https://example.com"}}} {
		s := New(cfg, Deps{Snapshot: snap}).Handler(Public)
		rec := do(s, "OPTIONS", "/api/v1/stats", map[string]string{"Origin": "https://www.example.org", "Access-Control-Request-Method": "GET"})
		want := `{"error":"origin https://www.example.org may not read this API (allow it with --cors-origin)"}` + "\n"
		if rec.Code != 403 || rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" ||
			rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("origins %q: %d %q %v", cfg.CORSOrigins, rec.Code, rec.Body.String(), rec.Header())
		}
		// A plain OPTIONS, not a preflight, is still a wrong method.
		if rec := do(s, "OPTIONS", "/api/v1/stats", nil); rec.Code != 405 {
			t.Errorf("OPTIONS without a preflight: %d, want 405", rec.Code)
		}
	}
}
