package main

import (
	"context"
	"fmt"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/api"
	"github.com/logtally/logtally/fleet"
	"github.com/logtally/logtally/keyring"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tailer"
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
func (r *runCmd) fleetSettings() error {
	if !r.Fleet.Enabled() {
		return nil
	}
	f := &r.Fleet
	f.Window, f.MaxSkew = r.Window.Length, r.Window.MaxSkew
	if r.Store.TZ != "" {
		f.TZ = r.Store.TZ
	}
	f.MinuteRetention, f.HourRetention, f.DayRetention = r.Store.MinuteRetention, r.Store.HourRetention, r.Store.DayRetention
	r.Store.Outbox, r.Store.MaxOutbox = true, f.MaxOutbox
	if r.Pipeline.flushLines() > maxFleetFlushLines {
		return fmt.Errorf("--flush-lines %d: at most %d with --fleet (one commit must fit in one shipped batch)",
			r.Pipeline.flushLines(), maxFleetFlushLines)
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("--fleet: %w", err)
	}
	switch {
	case r.Keys.SecretFile == "" && r.proc.Keys != nil: // a test's fixed key
		f.Verifier = fmt.Sprintf("fixed key %x", r.proc.Keys)
	case r.Keys.SecretFile == "":
		return keyring.ErrNoSecret
	default:
		secret, err := keyring.ReadSecret(r.Keys.SecretFile)
		if err != nil {
			return err
		}
		f.Verifier = string(secret.Verifier())
	}
	return nil
}

// joinFleet makes this node's part in the fleet, in fleet mode, once its
// logs are claimed: before any line is read, a name held by another
// database is refused, a secret other than the fleet's too, and a database
// behind the fleet takes the fleet's read positions.
func (r *runCmd) joinFleet(ctx context.Context, store *storage.Store) error {
	if !r.Fleet.Enabled() {
		return nil
	}
	if err := tailer.Claim(r.patterns, store); err != nil {
		return err
	}
	cfg := r.Fleet
	if r.Pipeline.multiSite() {
		cfg.Site = logtally.AllSites
	}
	r.node = fleet.NewNode(cfg, store.Outbox(), r.proc.Logger, r.proc.Now)
	return r.node.Check(ctx, false)
}

// apiFleet is what the API answers for the fleet from; nil without --fleet.
func (r *runCmd) apiFleet() *api.Fleet {
	if r.node == nil {
		return nil
	}
	node := r.node
	f := &api.Fleet{View: node.Current, History: node, Published: node.Published, Why: node.Why}
	if r.Pipeline.multiSite() {
		f.Site = func(name string) *api.Fleet {
			return &api.Fleet{View: func() *logtally.View { return node.SiteView(name) }, History: node.SiteHistory(name), Why: node.Why}
		}
	}
	return f
}
