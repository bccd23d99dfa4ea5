package outboxops

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LogReplayPlan is what [Replay] does to the log source's events (SourceLog),
// as [PlanReplay] reports it in [ReplayPlan.Log]: the log replays an order
// from its first published event in the window on, through a hold.
type LogReplayPlan struct {
	// FromSequence is, for a window that names one order, the order's
	// first published log event that occurred in the window; 0 when none
	// did, or when the window names no order (each order has its own).
	FromSequence int64
	// Events counts the published log events delivered again: each
	// order's from its first in the window on (the log replays an order's
	// tail, so events that occurred after the window's end are delivered
	// again too). Skipped events are not counted: the replay hands only
	// their tombstones again.
	Events int64
	// Orders is the number of orders whose log events are delivered again.
	Orders int64
	// HeldOrders is the number of orders of a window that names no order
	// that the replay leaves out: each is under a hold of the log (an event
	// quarantined, skipped but not yet passed, or a replay still running).
	// Name one with AggregateType and AggregateID to see why; retry or
	// skip its hold first.
	HeldOrders int64
	// First and Last are the oldest and newest occurred_at among the
	// events delivered again; nil when there are none.
	First, Last *time.Time

	orders []logOrderPlan
}

// logOrder is one order of the log: a row of OpsReplayLogOrders.
type logOrder struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
}

// logOrderPlan is what a replay does to one order of the log.
type logOrderPlan struct {
	logOrder
	fromSequence, events int64
}

// planReplayLog reports what [Replay] with opts does to the log: the
// orders with an event in the window (the one it names, or every one), each
// from its first published event in the window on. An order under a hold is
// refused when the window names it (ErrLogOrderHeld) and left out,
// counted in HeldOrders, when it does not. It refuses a window from before
// the log's retention horizon, checked before the log is read: the events
// retention dropped are no longer there to find. Its callers have checked
// the window itself and the replay horizon (checkReplayWindow).
func planReplayLog(ctx context.Context, db DB, opts ReplayOptions) (LogReplayPlan, error) {
	// Every replayed event occurred at or after From, so the replay
	// horizon's check is the one outbox_events' replay makes, which both
	// callers ran first (checkReplayWindow). The cleanup
	// horizon is outbox_events' retention; the log's is the newest seal of
	// a range dropped or retiring (RetainLog): its events before it
	// may be gone, so a window from before it is refused rather than
	// replayed in part. An event at a position below a range's end
	// occurred before that range's seal, so every replay that
	// ReplayLogOrder refuses with ErrLogRangeRetiring (a
	// retiring range ends after its first event) is refused here first;
	// that check, under retention's lock, covers a range retired since.
	ranges, err := LogRangesOf(ctx, db)
	if err != nil {
		return LogReplayPlan{}, err
	}
	if ranges.Horizon != nil && opts.From.Before(*ranges.Horizon) {
		return LogReplayPlan{}, fmt.Errorf("%w: From (%s) is before the log's retention horizon (%s): the log's events before it may be dropped; start the window at or after it",
			ErrReplayWindow, opts.From.UTC().Format(time.RFC3339), ranges.Horizon.UTC().Format(time.RFC3339))
	}
	orders, err := qOpsReplayLogOrders.All(ctx, db, opts.window())
	if err != nil {
		return LogReplayPlan{}, fmt.Errorf("outbox: replay: finding the log's orders in the window: %w", err)
	}
	var p LogReplayPlan
	for _, o := range orders {
		op, err := planReplayLogOrder(ctx, db, o, opts, &p)
		switch {
		case errors.Is(err, ErrLogOrderHeld) && opts.AggregateID == "":
			p.HeldOrders++
			continue
		case err != nil:
			return LogReplayPlan{}, err
		case op.events == 0:
			continue
		}
		p.Orders++
		p.Events += op.events
		p.orders = append(p.orders, op)
		if opts.AggregateID != "" {
			p.FromSequence = op.fromSequence
		}
	}
	return p, nil
}

// planReplayLogOrder plans the replay of o's log events in opts's window,
// adding their occurred_at to p's First and Last.
func planReplayLogOrder(ctx context.Context, db DB, o logOrder, opts ReplayOptions, p *LogReplayPlan) (logOrderPlan, error) {
	es, err := LogEvents(ctx, db, o.AggregateType, o.AggregateID)
	if err != nil {
		return logOrderPlan{}, err
	}
	op := logOrderPlan{logOrder: o}
	var first, last *time.Time
	for _, e := range es {
		if e.Held {
			return logOrderPlan{}, fmt.Errorf("outbox: replay %s/%s: %w: its event %d (%s) is %s; retry or skip the hold first (outboxctl list --quarantined)",
				o.AggregateType, o.AggregateID, ErrLogOrderHeld, e.Sequence, e.ID, e.State())
		}
		if e.State() != "published" {
			continue
		}
		if op.fromSequence == 0 && !e.OccurredAt.Before(opts.From) && e.OccurredAt.Before(opts.To) {
			op.fromSequence = e.Sequence
		}
		if op.fromSequence != 0 {
			at := e.OccurredAt
			if first == nil {
				first = &at
			}
			last = &at
			op.events++
		}
	}
	if first != nil {
		if p.First == nil || first.Before(*p.First) {
			p.First = first
		}
		if p.Last == nil || last.After(*p.Last) {
			p.Last = last
		}
	}
	return op, nil
}

// replayLog replays the orders of p through holds (ReplayLogOrder),
// one transaction each, and returns the events replayed. An order that came
// under a hold since the plan is left out when the window names no order;
// any other refusal stops the replay there.
func replayLog(ctx context.Context, db DB, opts ReplayOptions, p LogReplayPlan) (int64, error) {
	var n int64
	for _, o := range p.orders {
		err := ReplayLogOrder(ctx, db, o.AggregateType, o.AggregateID, o.fromSequence)
		switch {
		case errors.Is(err, ErrLogOrderHeld) && opts.AggregateID == "":
			continue
		case err != nil:
			return n, fmt.Errorf("outbox: replay of %s/%s in the log: %w", o.AggregateType, o.AggregateID, err)
		}
		n += o.events
	}
	return n, nil
}
