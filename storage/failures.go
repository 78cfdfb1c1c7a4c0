package storage

import (
	"errors"
	"fmt"
)

// failures are the sites a prune could not tidy or delete from, each with
// why. The sites share a prune's transactions, and one site's damage
// fails the transaction: its step is then done again for each site alone
// (see eachAlone), so that the damaged site fails and the others go on. A
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

// eachAlone runs step, which failed for items together, for each of them on
// its own, and records the site of each that fails again, passing over
// the items of a site that failed.
func eachAlone[T any](f failures, items []T, site func(T) *Site, step func(T) error) {
	for _, it := range items {
		if si := site(it); !f.failed(si) {
			if err := step(it); err != nil {
				f.add(si, err)
			}
		}
	}
}
