package storage

import (
	"errors"
	"fmt"
)

// failures are the sites a prune could not tidy or delete from, each with
// why. The sites share a prune's transactions, and one site's damage
// fails the transaction: its step is then done again for each site alone
// (see alone), so that the damaged site fails and the others go on. A
// site that failed is left out of the steps that follow, above all the
// deletions: a site whose days could not be folded must keep their
// per-day page counts, or their views would never reach its all-time
// totals.
type failures map[*Site]error

// add records that si failed with err, its first failure.
func (f failures) add(si *Site, err error) {
	if _, ok := f[si]; !ok {
		f[si] = fmt.Errorf("site %s: %w", si.name, err)
	}
}

// failed reports whether si failed.
func (f failures) failed(si *Site) bool {
	_, ok := f[si]
	return ok
}

// err joins the failures of sites, in their order.
func (f failures) err(sites []*Site) error {
	var errs []error
	for _, si := range sites {
		if err, ok := f[si]; ok {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// alone runs step, which failed for sites together, for each of them on
// its own, and records those that fail again.
func (f failures) alone(sites []*Site, step func(si *Site) error) {
	for _, si := range sites {
		if err := step(si); err != nil {
			f.add(si, err)
		}
	}
}
