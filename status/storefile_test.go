package status

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/logtally/logtally/storage"
)

// TestDeletedDatabaseFile: a database file deleted while open makes the
// daemon not ready, is the store's error in the status, and is
// logtally_store_file_gone 1 in /metrics. Before, all three said all was
// well.
func TestDeletedDatabaseFile(t *testing.T) {
	p, _ := pipeline(t)
	path := filepath.Join(t.TempDir(), "logtally.db")
	s, err := storage.Open(storage.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := New(Config{DB: path}, Deps{Pipeline: p, StoreFile: s.FileErr})
	gone := func() float64 {
		families, err := r.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "logtally_store_file_gone" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no logtally_store_file_gone")
		return 0
	}
	if err := r.Ready(); err != nil || r.Status().Store.State != "ok" || gone() != 0 {
		t.Fatalf("before: ready %v, store %+v, gone %v", err, r.Status().Store, gone())
	}
	os.Remove(path)
	want := fmt.Sprintf("%s: database file deleted or replaced while open: it was deleted", path)
	if err := r.Ready(); err == nil || err.Error() != want {
		t.Errorf("Ready() = %v, want %s", err, want)
	}
	if st := r.Status().Store; st.State != "failing" || st.Error != want {
		t.Errorf("status store = %+v, want failing: %s", st, want)
	}
	if gone() != 1 {
		t.Error("logtally_store_file_gone is not 1")
	}
}
