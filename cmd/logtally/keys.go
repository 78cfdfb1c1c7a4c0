package main

import (
	"log/slog"

	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/keyring"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tally"
)

// openKeys opens what visitors are hashed with, into cn.keys: the day keys
// derived from --visitor-secret-file, or random day keys kept in a file
// beside the database; or a test's fixed key. The keys of days that the
// stored lines show to be over are destroyed at once.
func (c *countConfig) openKeys(proc *process, cn *counting) (classify.Keys, error) {
	if proc.Keys != nil {
		return proc.Keys, nil
	}
	loc := cn.store.Location()
	keep := keyring.Keep(c.Window.Length, c.Window.MaxSkew)
	if c.Keys.SecretFile != "" {
		secret, err := keyring.ReadSecret(c.Keys.SecretFile)
		if err != nil {
			return nil, err
		}
		cn.keys = secret.Ring(loc, keep, proc.Logger)
	} else {
		var err error
		if cn.keys, err = keyring.OpenFile(keyring.FilePath(c.Store.Path), loc, keep, proc.Logger); err != nil {
			return nil, err
		}
	}
	newest, err := newestLine(cn.store)
	if err != nil {
		return nil, err
	}
	if _, err := cn.keys.Advance(newest); err != nil {
		return nil, err
	}
	return cn.keys, nil
}

// newestLine returns the start of the newest minute with a line stored,
// of any site, unix seconds; 0 if none.
func newestLine(store *storage.Store) (int64, error) {
	var newest int64
	for _, name := range store.Sites() {
		si, ok := store.Site(name)
		if !ok {
			continue
		}
		t, ok, err := si.Newest()
		if err != nil {
			return 0, err
		}
		if ok {
			newest = max(newest, t.Unix())
		}
	}
	return newest, nil
}

// keyedCommitter saves the day keys made since the last commit before it
// commits (so that no hash is stored whose key a restart would not find),
// and after, destroys the keys of the days that the committed lines show
// to be over.
type keyedCommitter struct {
	keys *keyring.Ring
	next committer
	log  *slog.Logger
}

func (k keyedCommitter) Commit(bs ...*tally.Batch) error {
	if err := k.keys.Save(); err != nil {
		return err
	}
	if err := k.next.Commit(bs...); err != nil {
		return err
	}
	var newest int64
	for _, b := range bs {
		for m := range b.Minutes() {
			newest = max(newest, m*60)
		}
	}
	if _, err := k.keys.Advance(newest); err != nil {
		// The commit stands: the key is destroyed at the next one.
		k.log.Error("visitor key: destroying the keys of days over failed", "err", err)
	}
	return nil
}
