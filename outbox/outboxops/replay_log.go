package outboxops

import (
	"context"
	"fmt"
	"time"

	"github.com/outflow/outflow/outbox"
)

// LogReplayPlan is what [ReplayLog] would do to one order of the log source
// (SourceLog), as [PlanReplayLog] reports it; [Replay] does it too, for the
// order its window names.
type LogReplayPlan struct {
	// FromSequence is the order's first published log event that occurred
	// in the window; 0 when none did (nothing to replay).
	FromSequence int64
	// Events counts the order's published events from FromSequence on:
	// the log replays an order's tail, so events that occurred after the
	// window's end are delivered again too. Skipped events are not
	// counted: the replay hands only their tombstones again.
	Events int64
	// First and Last are the oldest and newest occurred_at among them; nil
	// when there are none.
	First, Last *time.Time
}

// PlanReplayLog reports what [ReplayLog] with opts would replay, without
// changing anything, and refuses the same windows.
func PlanReplayLog(ctx context.Context, db DB, opts ReplayOptions) (LogReplayPlan, error) {
	switch {
	case opts.AggregateID == "" || opts.AggregateType == "":
		return LogReplayPlan{}, fmt.Errorf("%w: the log replays one order at a time: AggregateType and AggregateID are mandatory", ErrReplayWindow)
	case opts.From.IsZero() || opts.To.IsZero():
		return LogReplayPlan{}, fmt.Errorf("%w: both From and To are mandatory", ErrReplayWindow)
	case !opts.To.After(opts.From):
		return LogReplayPlan{}, fmt.Errorf("%w: To (%s) must be after From (%s)", ErrReplayWindow, opts.To.Format(time.RFC3339), opts.From.Format(time.RFC3339))
	}
	// Every replayed event occurred at or after From, so the replay
	// horizon's check is the one outbox_events' replay makes. The cleanup
	// horizon is outbox_events' retention; the log's is the newest seal of
	// a range dropped or retiring (outbox.RetainLog): its events before it
	// may be gone, so a window from before it is refused rather than
	// replayed in part. An event at a position below a range's end
	// occurred before that range's seal, so every replay that
	// outbox.ReplayLogOrder refuses with outbox.ErrLogRangeRetiring (a
	// retiring range ends after its first event) is refused here first;
	// that check, under retention's lock, covers a range retired since.
	if err := checkReplayHorizon(ctx, db, opts.From); err != nil {
		return LogReplayPlan{}, err
	}
	ranges, err := outbox.LogRangesOf(ctx, db)
	if err != nil {
		return LogReplayPlan{}, err
	}
	if ranges.Horizon != nil && opts.From.Before(*ranges.Horizon) {
		return LogReplayPlan{}, fmt.Errorf("%w: From (%s) is before the log's retention horizon (%s): the log's events before it may be dropped; start the window at or after it",
			ErrReplayWindow, opts.From.UTC().Format(time.RFC3339), ranges.Horizon.UTC().Format(time.RFC3339))
	}
	es, err := outbox.LogEvents(ctx, db, opts.AggregateType, opts.AggregateID)
	if err != nil {
		return LogReplayPlan{}, err
	}
	var p LogReplayPlan
	for _, e := range es {
		if e.Held {
			return LogReplayPlan{}, fmt.Errorf("outbox: replay %s/%s: %w: its event %d (%s) is %s; retry or skip the hold first (outboxctl list --quarantined)",
				opts.AggregateType, opts.AggregateID, outbox.ErrLogOrderHeld, e.Sequence, e.ID, e.State())
		}
		if e.State() != "published" {
			continue
		}
		if p.FromSequence == 0 && !e.OccurredAt.Before(opts.From) && e.OccurredAt.Before(opts.To) {
			p.FromSequence = e.Sequence
		}
		if p.FromSequence != 0 {
			at := e.OccurredAt
			if p.First == nil {
				p.First = &at
			}
			p.Last = &at
			p.Events++
		}
	}
	return p, nil
}

// ReplayLog delivers an order's published log events again from its first
// one that occurred in [From, To) on, through [outbox.ReplayLogOrder]: a
// hold whose worker publishes them in order, marked Event.Replay, with the
// semantics against Temporal that [Replay] describes. The window must name
// one order (AggregateType and AggregateID) and must not start before the
// replay horizon or the log's retention horizon (the newest seal of a
// range dropped or retiring); an order under a hold is refused
// (outbox.ErrLogOrderHeld), and so is a replay that a range retired since
// the plan would cut short (outbox.ErrLogRangeRetiring). The events an
// operator skipped are not counted, and only their tombstones are
// delivered again. It returns what it
// replayed (Events 0: nothing in the window).
func ReplayLog(ctx context.Context, db DB, opts ReplayOptions) (LogReplayPlan, error) {
	p, err := PlanReplayLog(ctx, db, opts)
	if err != nil || p.Events == 0 {
		return p, err
	}
	if err := outbox.ReplayLogOrder(ctx, db, opts.AggregateType, opts.AggregateID, p.FromSequence); err != nil {
		return LogReplayPlan{}, err
	}
	return p, nil
}
