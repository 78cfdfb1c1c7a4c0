package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/storage"
)

// daemonSource is where report reads a database that a running logtally
// holds: a consistent copy of it, which that logtally's admin API writes
// (GET /api/v1/backup) as one read transaction sees the file, while it
// goes on counting.
type daemonSource struct {
	addr      string // --daemon: its admin listener
	tokenFile string // --admin-token-file
}

// copyTimeout bounds the whole copy: a file of gigabytes takes seconds on
// loopback.
const copyTimeout = 10 * time.Minute

// fetch copies the database db from the daemon into a new file in the
// temporary directory, and returns its path, which the caller removes. It
// refuses a copy of another file than db: the daemon at addr may hold
// another.
func (d daemonSource) fetch(ctx context.Context, db string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, copyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.addr+"/api/v1/backup", nil)
	if err != nil {
		return "", err
	}
	if d.tokenFile != "" {
		token, err := readToken(d.tokenFile)
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	if got, want := resp.Header.Get(api.BackupDBHeader), absPath(db); got != want {
		return "", fmt.Errorf("the logtally there holds %s, not %s: give --daemon the admin address of the one that holds it", got, want)
	}
	f, err := os.CreateTemp("", "logtally-report-*.db")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("copy cut short: %w", err)
	}
	return f.Name(), nil
}

// openHeld opens a consistent copy of the database that a running
// logtally holds (locked, the error of opening it), taken through its
// admin API, and says so on stderr. close closes it and removes the copy.
func (c *reportCmd) openHeld(ctx context.Context, locked error) (store *storage.Store, close func(), err error) {
	copied, err := c.daemon.fetch(ctx, c.Store.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; and no copy could be taken through the admin API of a logtally at %s (--daemon): %v; "+
			"stop it to report from the file, or ask its API: /api/v1/series?step=1d and /api/v1/pages?from=DAY&to=DAY",
			locked, c.daemon.addr, err)
	}
	cfg := c.Store
	cfg.Path = copied
	store, err = storage.OpenReadOnly(cfg, reportLockWait)
	if err != nil {
		os.Remove(copied)
		return nil, nil, err
	}
	fmt.Fprintf(c.proc.Stderr, "logtally: %s is held by a running logtally: reporting from a consistent copy of it, "+
		"taken at %s through its admin API at %s\n", c.Store.Path, c.proc.Now().UTC().Format(time.RFC3339), c.daemon.addr)
	return store, func() { store.Close(); os.Remove(copied) }, nil
}
