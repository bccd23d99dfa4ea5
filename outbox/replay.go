package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReplayOptions selects the published events [Replay] delivers again.
type ReplayOptions struct {
	// From is the window's start (inclusive), compared with the events'
	// occurred_at. Mandatory; not before the cleanup horizon.
	From time.Time
	// To is the window's end (exclusive). Mandatory, after From.
	To time.Time
	// AggregateID restricts the replay to one aggregate (e.g. an order ID).
	// Optional: defaulted to every aggregate.
	AggregateID string
}

// ReplayPlan is what a replay would do, as [PlanReplay] reports it.
type ReplayPlan struct {
	// Events is the number of published events in the window.
	Events int64
	// First and Last are the oldest and newest occurred_at among them; nil
	// when there are none.
	First, Last *time.Time
}

// ErrReplayWindow is wrapped by the errors of [Replay] and [PlanReplay] for a
// window that is malformed or reaches before the cleanup horizon.
var ErrReplayWindow = errors.New("outbox: invalid replay window")

// Replay delivers published events again: every published event whose
// occurred_at is in [From, To) (of one aggregate, if set) becomes unpublished,
// available now, with its attempts reset, and flagged as a replay
// (replay_requested_at); relays are woken and publish it like a new event,
// in aggregate order. It returns the number of events replayed. Skipped,
// quarantined and pending events are not touched.
//
// # Semantics against Temporal
//
// The workflow ID is the event ID, so a replay is a second start of the same
// workflow ID. The Temporal publisher starts a replayed event with the reuse
// policy ALLOW_DUPLICATE_FAILED_ONLY (a first delivery uses REJECT_DUPLICATE;
// see temporalpub.ReusePolicy):
//   - a workflow that COMPLETED refuses the start; the refusal ("already
//     started") is the acknowledgement, and the event stays one run;
//   - a workflow that is still RUNNING refuses it too (conflict policy FAIL);
//   - a workflow that FAILED, was TERMINATED, CANCELLED or TIMED OUT gets a
//     new run under the same workflow ID.
//
// Effects stay single across runs: provider idempotency keys are derived from
// the event ID and the step (and after the providers' 24-hour key expiry the
// activities reconcile by the metadata they attached), and local effects go
// through the processed_events inbox, which is why [Cleanup] keeps inbox rows
// at least as long as their events.
//
// The relay's mark clears the flag once the replay is acknowledged. Events
// older than the cleanup horizon may already be deleted, so a window that
// starts before it is refused (error wrapping [ErrReplayWindow]) rather than
// silently replaying part of it.
func Replay(ctx context.Context, db DB, opts ReplayOptions) (int64, error) {
	var n int64
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		n, err = ReplayTx(ctx, tx, opts)
		return err
	})
	return n, err
}

// ReplayTx is [Replay] inside the caller's transaction; relays are woken when
// tx commits.
func ReplayTx(ctx context.Context, tx pgx.Tx, opts ReplayOptions) (int64, error) {
	if err := checkReplayWindow(ctx, tx, opts); err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, opsQueries.Get("OpsReplay"), opts.From, opts.To, opts.AggregateID)
	if err != nil {
		return 0, fmt.Errorf("outbox: replay: %w", err)
	}
	// A cleanup may have recorded a new horizon and deleted part of the
	// window between the check and the UPDATE (cleanup commits its horizon
	// before it deletes, and skips rows this UPDATE has locked). Checking
	// again here, a new statement seeing what has committed since, turns a
	// silently partial replay into a refusal that rolls the whole one back.
	if err := checkReplayWindow(ctx, tx, opts); err != nil {
		return 0, err
	}
	if tag.RowsAffected() > 0 {
		if _, err := tx.Exec(ctx, opsQueries.Get("OpsNotify")); err != nil {
			return 0, fmt.Errorf("outbox: replay: notify relays: %w", err)
		}
	}
	return tag.RowsAffected(), nil
}

// PlanReplay reports what [Replay] with opts would replay, without changing
// anything, and refuses the same windows.
func PlanReplay(ctx context.Context, db DB, opts ReplayOptions) (ReplayPlan, error) {
	if err := checkReplayWindow(ctx, db, opts); err != nil {
		return ReplayPlan{}, err
	}
	var p ReplayPlan
	err := db.QueryRow(ctx, opsQueries.Get("OpsReplayCount"), opts.From, opts.To, opts.AggregateID).Scan(&p.Events, &p.First, &p.Last)
	if err != nil {
		return ReplayPlan{}, fmt.Errorf("outbox: replay: counting events: %w", err)
	}
	return p, nil
}

func checkReplayWindow(ctx context.Context, db DB, opts ReplayOptions) error {
	switch {
	case opts.From.IsZero() || opts.To.IsZero():
		return fmt.Errorf("%w: both From and To are mandatory", ErrReplayWindow)
	case !opts.To.After(opts.From):
		return fmt.Errorf("%w: To (%s) must be after From (%s)", ErrReplayWindow, opts.To.Format(time.RFC3339), opts.From.Format(time.RFC3339))
	}
	horizon, err := CleanupHorizon(ctx, db)
	if err != nil {
		return err
	}
	if horizon != nil && opts.From.Before(*horizon) {
		return fmt.Errorf("%w: it starts at %s, before the cleanup horizon %s: events published before the horizon may already be deleted, and their inbox rows with them, so the replay would be incomplete; start the window at or after %s",
			ErrReplayWindow, opts.From.Format(time.RFC3339), horizon.Format(time.RFC3339Nano), horizon.Format(time.RFC3339Nano))
	}
	return nil
}

// CleanupHorizon returns the newest cutoff retention cleanup has used (events
// published before it may be deleted), or nil when cleanup never ran.
func CleanupHorizon(ctx context.Context, db DB) (*time.Time, error) {
	var h *time.Time
	if err := db.QueryRow(ctx, opsQueries.Get("OpsCleanupHorizon")).Scan(&h); err != nil {
		return nil, fmt.Errorf("outbox: reading the cleanup horizon: %w", err)
	}
	return h, nil
}
