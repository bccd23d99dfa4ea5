package outboxops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/namedsql"
)

// ReplayOptions selects the published events [Replay] delivers again.
type ReplayOptions struct {
	// From is the window's start (inclusive), compared with the events'
	// occurred_at. Mandatory; not before the cleanup horizon.
	From time.Time
	// To is the window's end (exclusive). Mandatory, after From.
	To time.Time
	// AggregateType restricts the replay to aggregates of one type (e.g.
	// "order"). Optional: defaulted to every type, but mandatory with
	// AggregateID, since an aggregate ID is only unique within its type.
	AggregateType string
	// AggregateID restricts the replay to one aggregate (e.g. an order ID)
	// of AggregateType. Optional: defaulted to every aggregate.
	AggregateID string
}

// ReplayPlan is what a replay would do, as [PlanReplay] reports it.
type ReplayPlan struct {
	// Events is the number of published events of outbox_events in the
	// window.
	Events int64
	// First and Last are the oldest and newest occurred_at among them; nil
	// when there are none.
	First, Last *time.Time
	// Log is what the replay does to the log source's events: the orders
	// with an event in the window (the one the window names, or every
	// one), each from its first published event in the window on.
	Log LogReplayPlan
}

// Total is the number of events the replay delivers again: outbox_events'
// and the log's.
func (p ReplayPlan) Total() int64 { return p.Events + p.Log.Events }

// ErrReplayWindow is wrapped by the errors of [Replay] and [PlanReplay] for a
// window that is malformed (an AggregateID without its AggregateType too) or
// reaches before the cleanup horizon or the replay horizon.
var ErrReplayWindow = errors.New("outbox: invalid replay window")

// Replay delivers published events again: every published event whose
// occurred_at is in [From, To) (of one aggregate, if set) becomes unpublished,
// available now, with its attempts reset, and flagged as a replay
// (replay_requested_at); relays are woken and publish it like a new event,
// in aggregate order. It returns the number of events replayed. Skipped,
// quarantined and pending events are not touched.
//
// The window covers the log source's events too (outbox_log), with the
// log's rules: the log replays an order at a time, through a hold, from the
// order's first published event in the window on (so its later events are
// delivered again too), the skipped ones only as their tombstones; each
// order's replay is a transaction of its own, after outbox_events' (as
// savepoints of the caller's when db is a pgx.Tx). What the log refuses is
// refused before anything is replayed: a window from before the log's
// retention horizon, and, when the window names one order, an order under
// a hold (ErrLogOrderHeld). A window that names no order leaves the
// orders under a hold out ([LogReplayPlan.HeldOrders] counts them).
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
// That holds while Temporal remembers the workflow: a namespace forgets a
// closed workflow after its retention, and a replayed event whose workflow is
// gone starts a brand-new run. The starter records the retention as the
// replay horizon ([RecordReplayHorizon]), and a window that starts before
// now minus that horizon is refused (error wrapping [ErrReplayWindow]).
//
// The relay's mark clears the flag once the replay is acknowledged. Events
// older than the cleanup horizon may already be deleted, so a window that
// starts before it is refused too, rather than silently replaying part of
// it.
//
// # Ordering
//
// A replayed event goes through its aggregate's lane again: it waits for its
// unpublished predecessors, and for any successor that is being published.
// A relay may be claiming a successor at the moment of the replay, having
// seen the replayed event still published; the replay waits for that claim
// to commit before it commits itself (see OpsReplayFence in operations.sql),
// so the aggregate never has two events in flight. Enqueues on the replayed
// aggregates wait for the replay's commit.
func Replay(ctx context.Context, db DB, opts ReplayOptions) (int64, error) {
	if err := checkReplayWindow(ctx, db, opts); err != nil {
		return 0, err
	}
	logPlan, err := planReplayLog(ctx, db, opts)
	if err != nil {
		return 0, err
	}
	var n int64
	err = inTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		n, err = replay(ctx, tx, opts)
		return err
	})
	if err != nil || logPlan.Events == 0 {
		return n, err
	}
	m, err := replayLog(ctx, db, opts, logPlan)
	if err != nil {
		if n+m > 0 {
			return n + m, fmt.Errorf("outbox: replay: %d events are replayed (outbox_events' %d, the log's %d), the rest of the log's are not: %w", n+m, n, m, logStateError(err))
		}
		return 0, logStateError(err)
	}
	return n + m, nil
}

// replay is [Replay] in tx; relays are woken when tx commits. Until then it
// holds the replayed aggregates' locks: enqueues on them and claims of their
// later events wait (or skip them) until tx ends.
func replay(ctx context.Context, tx pgx.Tx, opts ReplayOptions) (int64, error) {
	if err := checkReplayWindow(ctx, tx, opts); err != nil {
		return 0, err
	}
	lanes, err := qOpsReplay.All(ctx, tx, opts.window())
	if err != nil {
		return 0, fmt.Errorf("outbox: replay: %w", err)
	}
	var (
		n     int64
		fence replayFenceArgs
	)
	for _, l := range lanes {
		fence.AggregateTypes = append(fence.AggregateTypes, l.AggregateType)
		fence.AggregateIDs = append(fence.AggregateIDs, l.AggregateID)
		fence.FirstSequences = append(fence.FirstSequences, l.FirstSequence)
		n += l.Events
	}
	if n > 0 {
		// Before this transaction commits, no event may join the replayed
		// aggregates, and every claim in flight on their later events must
		// have committed its lease: see OpsReplayLockLanes and
		// OpsReplayFence for why, and why in this order.
		lock := replayLanesArgs{AggregateTypes: fence.AggregateTypes, AggregateIDs: fence.AggregateIDs}
		if _, err := qOpsReplayLockLanes.Exec(ctx, tx, lock); err != nil {
			return 0, fmt.Errorf("outbox: replay: locking the replayed aggregates: %w", err)
		}
		if _, err := qOpsReplayFence.Exec(ctx, tx, fence); err != nil {
			return 0, fmt.Errorf("outbox: replay: waiting for claims in flight: %w", err)
		}
	}
	// A cleanup may have recorded a new horizon and deleted part of the
	// window between the check and the UPDATE (cleanup commits its horizon
	// before it deletes, and skips rows this UPDATE has locked). Checking
	// again here, a new statement seeing what has committed since, turns a
	// silently partial replay into a refusal that rolls the whole one back.
	if err := checkReplayWindow(ctx, tx, opts); err != nil {
		return 0, err
	}
	if n > 0 {
		if _, err := qOpsNotify.Exec(ctx, tx, namedsql.NoArgs{}); err != nil {
			return 0, fmt.Errorf("outbox: replay: notify relays: %w", err)
		}
	}
	return n, nil
}

// replayedLane is one aggregate a replay made unpublished events of: a row
// of OpsReplay.
type replayedLane struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	// FirstSequence is its lowest replayed sequence.
	FirstSequence int64 `db:"first_sequence"`
	// Events is the number of its events replayed.
	Events int64 `db:"events"`
}

// window is the statement arguments that select opts's events.
func (opts ReplayOptions) window() replayWindowArgs {
	return replayWindowArgs(opts) // the same fields: the conversion breaks if they drift apart
}

// PlanReplay reports what [Replay] with opts would replay, outbox_events'
// events and the log's, without changing anything, and refuses the same
// windows.
func PlanReplay(ctx context.Context, db DB, opts ReplayOptions) (ReplayPlan, error) {
	if err := checkReplayWindow(ctx, db, opts); err != nil {
		return ReplayPlan{}, err
	}
	c, err := qOpsReplayCount.One(ctx, db, opts.window())
	if err != nil {
		return ReplayPlan{}, fmt.Errorf("outbox: replay: counting events: %w", err)
	}
	p := ReplayPlan{Events: c.Events, First: c.FirstOccurredAt, Last: c.LastOccurredAt}
	if p.Log, err = planReplayLog(ctx, db, opts); err != nil {
		return ReplayPlan{}, err
	}
	return p, nil
}

// checkReplayWindow refuses options Replay must not act on. It reads the
// horizons from db's clock; within one transaction, now() does not move, so
// replay's two checks agree.
func checkReplayWindow(ctx context.Context, db DB, opts ReplayOptions) error {
	switch {
	case opts.From.IsZero() || opts.To.IsZero():
		return fmt.Errorf("%w: both From and To are mandatory", ErrReplayWindow)
	case !opts.To.After(opts.From):
		return fmt.Errorf("%w: To (%s) must be after From (%s)", ErrReplayWindow, opts.To.Format(time.RFC3339), opts.From.Format(time.RFC3339))
	case opts.AggregateID != "" && opts.AggregateType == "":
		return fmt.Errorf("%w: aggregate %q needs its AggregateType (e.g. \"order\"): an aggregate ID is only unique within its type", ErrReplayWindow, opts.AggregateID)
	}
	return checkCleanupAndReplayHorizons(ctx, db, opts)
}

// checkCleanupAndReplayHorizons refuses a window that reaches before the
// cleanup horizon or the replay horizon.
func checkCleanupAndReplayHorizons(ctx context.Context, db DB, opts ReplayOptions) error {
	horizon, err := cleanupHorizon(ctx, db)
	if err != nil {
		return err
	}
	if horizon != nil && opts.From.Before(*horizon) {
		return fmt.Errorf("%w: it starts at %s, before the cleanup horizon %s: events published before the horizon may already be deleted, and their inbox rows with them, so the replay would be incomplete; start the window at or after %s",
			ErrReplayWindow, opts.From.Format(time.RFC3339), horizon.Format(time.RFC3339Nano), horizon.Format(time.RFC3339Nano))
	}
	return checkReplayHorizon(ctx, db, opts.From)
}

// checkReplayHorizon refuses a replay that reaches events that occurred
// before from when from is before the replay horizon.
func checkReplayHorizon(ctx context.Context, db DB, from time.Time) error {
	rh, err := readReplayHorizon(ctx, db)
	if err != nil {
		return err
	}
	if rh.horizon > 0 && from.Before(rh.earliest) {
		return fmt.Errorf("%w: it starts at %s, before the replay horizon of %s (%s; recorded %s): Temporal may have forgotten the workflow of an older event, and its replay would start a brand-new run instead of being recognised; start the window at or after %s",
			ErrReplayWindow, from.Format(time.RFC3339), rh.horizon, rh.reason, rh.recordedAt.Format(time.RFC3339),
			rh.earliest.Format(time.RFC3339Nano))
	}
	return nil
}

// cleanupHorizon returns the newest cutoff retention cleanup has used (events
// published before it may be deleted), or nil when cleanup never ran; it is
// [StatusReport.CleanupHorizon].
func cleanupHorizon(ctx context.Context, db DB) (*time.Time, error) {
	h, err := qOpsCleanupHorizon.One(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return nil, fmt.Errorf("outbox: reading the cleanup horizon: %w", err)
	}
	return h, nil
}

// RecordReplayHorizon records horizon, how long Temporal keeps a closed
// workflow (the namespace's retention, or less), and reason, which names
// where it comes from (e.g. `Temporal namespace "default" keeps closed
// workflows 24h0m0s`): [Replay] and [PlanReplay] then refuse a window that
// starts before now minus horizon, quoting reason. The starter calls it at
// start-up and whenever the retention it reads changes; the latest recording
// replaces the previous one. horizon must be positive. One statement; db may
// be the caller's transaction.
func RecordReplayHorizon(ctx context.Context, db DB, horizon time.Duration, reason string) error {
	switch {
	case horizon < time.Millisecond:
		return fmt.Errorf("outbox: a replay horizon must be at least 1ms, got %s", horizon)
	case strings.TrimSpace(reason) == "":
		return errors.New("outbox: a replay horizon needs a reason naming where it comes from")
	}
	if _, err := qOpsRecordReplayHorizon.Exec(ctx, db, recordReplayHorizonArgs{HorizonMS: horizon.Milliseconds(), Reason: reason}); err != nil {
		return fmt.Errorf("outbox: recording the replay horizon: %w", err)
	}
	return nil
}

// ReplayHorizon returns the replay horizon last recorded by
// [RecordReplayHorizon] and its reason, or 0 and "" when none was ever
// recorded (then only the cleanup horizon limits a replay).
func ReplayHorizon(ctx context.Context, db DB) (time.Duration, string, error) {
	rh, err := readReplayHorizon(ctx, db)
	return rh.horizon, rh.reason, err
}

// replayHorizon is the recorded replay horizon; the zero value when none.
type replayHorizon struct {
	horizon    time.Duration
	reason     string
	recordedAt time.Time
	// earliest is the oldest occurred_at a replay may reach now, by the
	// database's clock.
	earliest time.Time
}

func readReplayHorizon(ctx context.Context, db DB) (replayHorizon, error) {
	row, err := qOpsReplayHorizon.One(ctx, db, namedsql.NoArgs{})
	if errors.Is(err, pgx.ErrNoRows) {
		return replayHorizon{}, nil
	}
	if err != nil {
		return replayHorizon{}, fmt.Errorf("outbox: reading the replay horizon: %w", err)
	}
	return replayHorizon{
		horizon:    time.Duration(row.HorizonMS) * time.Millisecond,
		reason:     row.Reason,
		recordedAt: row.RecordedAt,
		earliest:   row.EarliestOccurredAt,
	}, nil
}
