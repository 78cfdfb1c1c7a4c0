package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/logtally/logtally"
)

// TestBackupIsTheAdminsAlone: /api/v1/backup writes the store's copy with
// its length and the file it is of, on the admin listener alone.
func TestBackupIsTheAdminsAlone(t *testing.T) {
	file := "a consistent copy of the file"
	s := New(DefaultConfig(), Deps{
		Snapshot: func() *logtally.Snapshot { return &logtally.Snapshot{} },
		Backup: func(w io.Writer, size func(int64)) error {
			size(int64(len(file)))
			_, err := io.WriteString(w, file)
			return err
		},
		DB: "/var/lib/logtally/logtally.db",
	})
	defer s.Close()
	for _, tt := range []struct {
		l      Listener
		target string
		code   int
		body   string
	}{
		{Admin, "/api/v1/backup", http.StatusOK, file},
		{Admin, "/api/v1/backup?x=1", http.StatusBadRequest, `{"error":"unknown query parameter \"x\""}`},
		{Public, "/api/v1/backup", http.StatusNotFound, `{"error":"no such endpoint: /api/v1/backup"}`},
	} {
		w := httptest.NewRecorder()
		s.Handler(tt.l).ServeHTTP(w, httptest.NewRequest(http.MethodGet, tt.target, nil))
		if got := strings.TrimSpace(w.Body.String()); w.Code != tt.code || got != tt.body {
			t.Errorf("%v %s: %d %s, want %d %s", tt.l, tt.target, w.Code, got, tt.code, tt.body)
		}
		if tt.code == http.StatusOK && (w.Header().Get("Content-Length") != "29" || w.Header().Get(BackupDBHeader) != "/var/lib/logtally/logtally.db") {
			t.Errorf("%s: headers %v", tt.target, w.Header())
		}
	}
}
