package storage

import bolt "go.etcd.io/bbolt"

// Every transaction that may change a site's path log (a commit, a
// compaction, folding a day, CopySite) is a writeTx: bbolt's Update commits
// inside, leaving no moment between the transaction's writes and its
// commit to publish the log's change to readers, nor one after it to apply
// the change (see pathLog). The others (pruning's deletions, the outbox,
// SetStreamSince) change no log and are plain Updates.

// siteChange is a change a write transaction makes to one site's path log.
type siteChange struct {
	log *pathLog
	ch  *logChange // nil: none
}

// writeTx runs fn in a write transaction and commits it, under guarded.
// The caller holds writeMu. The changes to path logs that fn returns are
// published before the commit and applied after it, so that no log's lock
// is held while the transaction commits.
func (s *Store) writeTx(fn func(tx *bolt.Tx) ([]siteChange, error)) error {
	return s.guarded(func() error {
		tx, err := s.db.Begin(true)
		if err != nil {
			return err
		}
		defer tx.Rollback() // after fn failed or panicked; a no-op once committed
		changes, err := fn(tx)
		if err != nil {
			return err
		}
		return s.commitChanges(tx, changes)
	})
}

// commitChanges commits tx, which makes changes to path logs: published
// before the commit, applied after it, withdrawn if it fails or panics.
func (s *Store) commitChanges(tx *bolt.Tx, changes []siteChange) error {
	for _, c := range changes {
		if c.ch != nil {
			c.log.publish(c.ch, tx.ID())
		}
	}
	committed := false
	defer func() {
		for _, c := range changes {
			if c.ch != nil && !committed {
				c.log.withdraw()
			}
		}
	}()
	if err := s.commit(tx); err != nil {
		return err
	}
	committed = true
	for _, c := range changes {
		if c.ch != nil {
			c.log.apply(c.ch)
		}
	}
	return nil
}
