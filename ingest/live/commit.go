package live

import "time"

// commit commits what the batches hold, each with the first second of its
// window, so that the store drops the checkpointed seconds before it.
func (l *Loop) commit() error {
	pending := l.Pending()
	if pending == nil {
		return nil
	}
	now := l.now()
	l.batches = l.batches[:0]
	for i, s := range pending {
		w := l.wins.of(s)
		if i < len(pending)-1 {
			l.wins.advance(w, now) // all's, the last, is where the lines put it
		}
		s.Batch.SetWindowStart(w.Start())
		l.batches = append(l.batches, s.Batch)
	}
	began := time.Now()
	if err := l.Committed(l.store.Commit(l.batches...), began); err != nil {
		return err
	}
	for _, s := range pending {
		s.Batch.Reset()
	}
	l.ClearPending()
	return nil
}
