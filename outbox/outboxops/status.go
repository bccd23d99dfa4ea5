package outboxops

import (
	"context"
	"fmt"
	"time"

	"github.com/outflow/outflow/outbox/namedsql"
)

// StatusReport is the outbox's state at one moment, for operators
// (`outboxctl status`).
type StatusReport struct {
	// CheckedAt is the database's clock when the report was taken.
	CheckedAt time.Time `json:"checked_at"`
	// Source is the relay source the database records ([Source]): which
	// one the relays follow and where Enqueue writes, with its last change.
	Source SourceState `json:"source"`
	// Pending counts unpublished events that are neither quarantined nor
	// skipped, backing-off and blocked ones included.
	Pending int64 `json:"pending"`
	// OldestPendingAge is the age of the oldest pending event (for a
	// replayed event, since the replay was requested); 0 when none.
	OldestPendingAge time.Duration `json:"oldest_pending_age_ns"`
	// OldestPendingAgeSeconds is OldestPendingAge in seconds, as the
	// outbox_oldest_pending_age_seconds gauge reports it.
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	// Quarantined counts events waiting for an operator (retry or skip).
	Quarantined int64 `json:"quarantined"`
	// BackingOff counts pending events waiting for their retry after a
	// failed publish.
	BackingOff int64 `json:"backing_off"`
	// Replaying counts replayed events not yet published again.
	Replaying int64 `json:"replaying"`
	// Skipped counts events operators gave up on (until cleanup deletes them).
	Skipped int64 `json:"skipped"`
	// Leases are the live leases, by relay.
	Leases []LeaseHolder `json:"leases"`
	// SinkBreakers are the relays whose circuit breaker on their sink is
	// open: they claim nothing and probe the sink. Empty while every
	// relay's sink answers.
	SinkBreakers []SinkBreaker `json:"sink_breakers"`
	// Published counts events marked published recently.
	Published Throughput `json:"published"`
	// CleanupHorizon is the newest cutoff retention cleanup has used: events
	// published before it may be deleted, and a replay cannot start before
	// it. Nil when cleanup never ran.
	CleanupHorizon *time.Time `json:"cleanup_horizon"`
	// Log is the log source's state (outbox_log): its cursors, leases,
	// pending events, holds and ranges; nil when the log was never
	// written (a database whose producers write outbox_events only).
	Log *LogStatusReport `json:"log,omitempty"`
	// CDCSlot is the cdc source's replication slot [StatusOptions.CDCSlot]
	// names; nil when it does not exist.
	CDCSlot *SlotStatus `json:"cdc_slot,omitempty"`
}

// StatusOptions configures [StatusOf].
type StatusOptions struct {
	// CDCSlot names the cdc source's replication slot to report on.
	// Optional: defaulted to the relay's default ([CDCSlotDefault]).
	CDCSlot string
}

// LeaseHolder is one relay's live leases.
type LeaseHolder struct {
	// Owner is the relay's identity (claimed_by): "hostname-pid-random".
	Owner string `json:"owner"`
	// Events is the number of events it holds.
	Events int64 `json:"events"`
	// EarliestExpiry is when its first lease ends.
	EarliestExpiry time.Time `json:"earliest_expiry"`
}

// SinkBreaker is one relay's open breaker on its sink: the sink failed
// BreakerThreshold publishes in a row, and the relay probes it with
// backoff until it answers. A sink that is down is never an event's fault:
// no attempt is counted meanwhile.
type SinkBreaker struct {
	// Owner is the relay's identity, as in [LeaseHolder].
	Owner string `db:"owner" json:"owner"`
	// OpenedAt is when the breaker opened; ProbedAt the relay's last
	// probe (or the opening), Probes how many failed.
	OpenedAt time.Time `db:"opened_at" json:"opened_at"`
	ProbedAt time.Time `db:"probed_at" json:"probed_at"`
	Probes   int       `db:"probes" json:"probes"`
	// LastError is the sink's last error.
	LastError string `db:"last_error" json:"last_error,omitempty"`
	// Stale: the relay has not probed for ten minutes; it stopped with its
	// breaker open (its row goes when another breaker opens an hour on).
	Stale bool `db:"stale" json:"stale"`
}

// Throughput counts events published in the last 1, 5 and 15 minutes.
type Throughput struct {
	Last1m  int64 `json:"last_1m"`
	Last5m  int64 `json:"last_5m"`
	Last15m int64 `json:"last_15m"`
}

// Status reports the outbox's backlog, quarantine, leases and recent
// throughput, and the log source's state when the log was written. Its
// queries visit unpublished rows and the last 15 minutes of published ones
// only (the log's: the events after its cursors), so it stays cheap on a
// large table. It is [StatusOf] with the default options.
func Status(ctx context.Context, db DB) (StatusReport, error) {
	return StatusOf(ctx, db, StatusOptions{})
}

// StatusOf is [Status] with the cdc source's replication slot too, when it
// exists.
func StatusOf(ctx context.Context, db DB, opts StatusOptions) (StatusReport, error) {
	row, err := qOpsStatus.One(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return StatusReport{}, fmt.Errorf("outbox: status: %w", err)
	}
	s := StatusReport{
		CheckedAt:               row.CheckedAt,
		Pending:                 row.Pending,
		OldestPendingAge:        time.Duration(row.OldestPendingAgeSeconds * float64(time.Second)),
		OldestPendingAgeSeconds: row.OldestPendingAgeSeconds,
		Quarantined:             row.Quarantined,
		BackingOff:              row.BackingOff,
		Replaying:               row.Replaying,
		Skipped:                 row.Skipped,
		Leases:                  []LeaseHolder{},
		Published:               Throughput{Last1m: row.PublishedLast1m, Last5m: row.PublishedLast5m, Last15m: row.PublishedLast15m},
		CleanupHorizon:          row.CleanupHorizon,
	}
	leases, err := qOpsLeases.All(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return StatusReport{}, fmt.Errorf("outbox: status: leases: %w", err)
	}
	for _, l := range leases {
		s.Leases = append(s.Leases, LeaseHolder{Owner: deref(l.ClaimedBy), Events: l.Events, EarliestExpiry: l.EarliestExpiry})
	}
	if s.SinkBreakers, err = qOpsSinkBreakers.All(ctx, db, namedsql.NoArgs{}); err != nil {
		return StatusReport{}, fmt.Errorf("outbox: status: sink breakers: %w", err)
	}
	if s.SinkBreakers == nil {
		s.SinkBreakers = []SinkBreaker{}
	}
	slot, hasSlot, err := Slot(ctx, db, opts.CDCSlot)
	if err != nil {
		return StatusReport{}, fmt.Errorf("outbox: status: %w", err)
	}
	if hasSlot {
		s.CDCSlot = &slot
	}
	lg, err := LogStatus(ctx, db)
	if err != nil {
		return StatusReport{}, err
	}
	if lg.Used {
		s.Log = &lg
	}
	if s.Source, err = Source(ctx, db); err != nil {
		return StatusReport{}, fmt.Errorf("outbox: status: %w", err)
	}
	return s, nil
}
