package main

import (
	"context"
	"fmt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/fleet"
	"github.com/logtally/logtally/tally"
)

// maxFleetFlushLines is the most --flush-lines fleet mode takes: a batch
// of that many lines, each counted in its minute and its live second,
// stays within what one encoded batch may hold.
const maxFleetFlushLines = tally.MaxBatchViews / 4

// fleetSettings gives fleet mode what it shares with this node's window and
// store (the window's length and skew, the zone of days, the retentions),
// turns the store's outbox on, and checks the result. Without --fleet it
// does nothing.
func (m *Main) fleetSettings() error {
	if m.Command != "run" || !m.Fleet.Enabled() {
		return nil
	}
	f := &m.Fleet
	f.Window, f.MaxSkew = m.Window.Length, m.Window.MaxSkew
	if m.Store.TZ != "" {
		f.TZ = m.Store.TZ
	}
	f.MinuteRetention, f.HourRetention, f.DayRetention = m.Store.MinuteRetention, m.Store.HourRetention, m.Store.DayRetention
	m.Store.Outbox, m.Store.MaxOutbox = true, f.MaxOutbox
	if m.Ingest.flushLines() > maxFleetFlushLines {
		return fmt.Errorf("--flush-lines %d: at most %d with --fleet (one commit must fit in one shipped batch)",
			m.Ingest.flushLines(), maxFleetFlushLines)
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("--fleet: %w", err)
	}
	return nil
}

// salt returns the salt visitors are hashed with: the store's own, or in
// fleet mode the fleet's, so that one visitor is one hash on every node. A
// node that has never reached the fleet database waits for it here.
func (m *Main) salt(ctx context.Context) (uint64, error) {
	if m.Command != "run" || !m.Fleet.Enabled() {
		return m.store.Salt(), nil
	}
	cfg := m.Fleet
	if m.multiSite() {
		cfg.Site = logtally.AllSites
	}
	m.fleet = fleet.NewNode(cfg, m.store.Outbox(), m.Logger, m.Now)
	return m.fleet.Salt(ctx)
}

// apiFleet is what the API answers for the fleet from; nil without --fleet.
func (m *Main) apiFleet() *api.Fleet {
	if m.fleet == nil {
		return nil
	}
	f := &api.Fleet{View: m.fleet.Current, History: m.fleet}
	if m.multiSite() {
		f.Site = func(name string) *api.Fleet {
			return &api.Fleet{View: func() *logtally.View { return m.fleet.SiteView(name) }, History: m.fleet.SiteHistory(name)}
		}
	}
	return f
}
