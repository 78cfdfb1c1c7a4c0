package api

import (
	"io"
	"net/http"
	"strconv"
	"time"
)

// Backup writes a consistent copy of the database file, as one read
// transaction sees it, while commits go on: what `logtally report` reads
// while the daemon holds the file. size is called with the copy's length
// before anything is written.
type Backup func(w io.Writer, size func(n int64)) error

// BackupDBHeader names, in the answer of GET /api/v1/backup, the database
// file the copy is of, so that a reader can tell it asked the daemon that
// holds the file it wants.
const BackupDBHeader = "Logtally-Db"

// backup answers GET /api/v1/backup: the database file, as a consistent
// copy (application/octet-stream), with its length, so that a copy cut
// short is told from a whole one. It is the operator's: the admin
// listener's alone.
func (s *Server) backup(w http.ResponseWriter, r *request) error {
	if err := r.only(); err != nil {
		return err
	}
	// A large file takes longer than the server's write timeout.
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	started := false
	err := s.deps.Backup(w, func(n int64) {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		w.Header().Set(BackupDBHeader, s.deps.DB)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
	})
	if err != nil && started {
		// The status is sent: cutting the connection short of the length
		// is how the client learns.
		s.deps.Logger.Error("api", "path", r.URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}
