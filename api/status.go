package api

import (
	"net/http"
	"time"
)

// Status is the body of GET /api/v1/status: what an operator checks first.
type Status struct {
	Version       string           `json:"version"`
	Started       time.Time        `json:"started"`
	UptimeSeconds float64          `json:"uptime_seconds"`
	Files         []FileStatus     `json:"files"`
	Lines         LineStatus       `json:"lines"`
	Samples       []RejectedSample `json:"rejected_samples"`
	Store         StoreStatus      `json:"store"`
	Sites         *SitesStatus     `json:"sites,omitempty"` // absent when one site is counted
	Fleet         *FleetStatus     `json:"fleet,omitempty"` // absent without fleet mode
	// API is the state of the heavy history queries, which the API fills
	// in; absent until one has run.
	API *HeavyStatus `json:"api,omitempty"`
}

// FileStatus is one followed or replayed file.
type FileStatus struct {
	Path        string `json:"path"`
	Fingerprint string `json:"fingerprint"`
	Offset      int64  `json:"offset"`
	Size        int64  `json:"size"`
	LagBytes    int64  `json:"lag_bytes"`
	// State is following, rotated, waiting (no first line yet), missing (a
	// path or glob that matches no file) or unreadable.
	State string `json:"state"`
	Error string `json:"error,omitempty"` // why an unreadable file cannot be read
}

// LineStatus counts lines since the daemon started.
type LineStatus struct {
	Read      int64            `json:"read"`
	Parsed    int64            `json:"parsed"`
	Rejected  int64            `json:"rejected"`
	ByReason  map[string]int64 `json:"rejected_by_reason"`
	BytesRead int64            `json:"bytes_read"`
}

// RejectedSample is one of the last rejected lines, cut to a bounded length.
type RejectedSample struct {
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"`
	Line   string    `json:"line"`
}

// StoreStatus is the database's state.
type StoreStatus struct {
	Path string `json:"path"`
	// State is "ok", "failing" (commits fail, or the file is gone: see
	// Error) or "damaged" (see Damage).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Damage is what is known to be damaged in the file, and Recover how
	// to recover from it; absent while nothing is.
	Damage     []string  `json:"damage,omitempty"`
	Recover    string    `json:"recover,omitempty"`
	Commits    int64     `json:"commits"`
	LastCommit time.Time `json:"last_commit,omitzero"` // absent before the first commit
}

// SitesStatus is how many sites are counted apart (--site, --site-field)
// and whether the limit on them was reached.
type SitesStatus struct {
	Counted  int `json:"counted"`
	MaxSites int `json:"max_sites"`
	// OtherLines counts the lines of sites first seen past max_sites, which
	// count under (other) since start.
	OtherLines int64 `json:"other_lines"`
}

// FleetStatus is fleet mode's part of the status: how far this node has
// shipped its commits to the fleet database, what waits in its outbox, and
// what went wrong last.
type FleetStatus struct {
	Node string `json:"node"`
	// State is connecting (the fleet database not reached since start),
	// shipping, retrying (the last attempt failed; the outbox keeps the
	// batches), blocked (the last attempt failed on what only a fix can
	// mend, a wrong password, a missing database or privilege, a refused
	// batch: last_error says what to do; tried again every minute) or
	// stopped (an error that retrying cannot mend: see last_error).
	State                string       `json:"state"`
	PendingBatches       int64        `json:"pending_batches"` // committed, not yet acknowledged and deleted
	PendingBytes         int64        `json:"pending_bytes"`
	OldestPendingSeconds float64      `json:"oldest_pending_seconds"` // age of the oldest pending batch; 0 when none
	LastSeq              uint64       `json:"last_seq"`               // number of the last batch committed
	AckedSeq             uint64       `json:"acked_seq"`              // the last batch the fleet acknowledged since start
	Applied              int64        `json:"applied"`                // batches applied since start
	Duplicates           int64        `json:"duplicates"`             // re-sent batches the fleet already had
	Failures             int64        `json:"failures"`               // attempts that failed and were retried
	LastError            string       `json:"last_error,omitempty"`   // the last failure, even after recovery
	LastErrorAt          time.Time    `json:"last_error_at,omitzero"`
	AsOf                 time.Time    `json:"as_of,omitzero"`          // when the fleet's counts served were read, by the fleet database's clock
	RefreshError         string       `json:"refresh_error,omitempty"` // why the last read of them failed, if it did
	Clock                *ClockStatus `json:"clock,omitempty"`         // absent until the fleet database's clock was read
}

// ClockStatus is this node's clock against the fleet database's, whose
// clock the fleet's live window follows.
type ClockStatus struct {
	// OffsetSeconds is this node's clock minus the fleet database's, as
	// last measured (every read of the fleet's counts): beyond
	// max_skew_seconds, the log warns to sync this machine's clock.
	OffsetSeconds  float64   `json:"offset_seconds"`
	MaxSkewSeconds float64   `json:"max_skew_seconds"`
	MeasuredAt     time.Time `json:"measured_at"` // by this node's clock
	// FutureLines counts the lines, since start, left out of the fleet's
	// live window for being dated beyond the fleet database's clock plus
	// the max skew; they count in its history.
	FutureLines int64 `json:"future_lines"`
}

// status answers GET /api/v1/status.
func (s *Server) status(w http.ResponseWriter, r *request) error {
	if err := r.only(); err != nil {
		return err
	}
	if s.deps.Status == nil {
		return notFound("no status is available")
	}
	st := s.deps.Status()
	if st.Files == nil {
		st.Files = []FileStatus{}
	}
	if st.Samples == nil {
		st.Samples = []RejectedSample{}
	}
	if h := s.heavy.status(); *h != (HeavyStatus{Max: h.Max}) || s.heavy.ran.Load() {
		st.API = h
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *request) error {
	if err := s.deps.Ready(); err != nil {
		return &Error{Code: CodeUnavailable, Message: "not ready: " + err.Error()}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
