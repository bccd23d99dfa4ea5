package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
)

// CancelOrderResult is the body of a 202 response to POST /orders/{id}/cancel.
type CancelOrderResult struct {
	OrderID uuid.UUID `json:"order_id"`
	// EventID is the OrderCancelled event, also the compensation workflow's ID.
	EventID           uuid.UUID `json:"event_id"`
	AggregateSequence int64     `json:"aggregate_sequence"`
	// Replayed is true when the order was already cancelled: nothing was
	// written and the result is the first cancel's.
	Replayed bool `json:"-"`
}

// CancelOrder cancels the order in one transaction: it locks the order row,
// enqueues OrderCancelled and marks the order cancelled. Any status but
// cancelled can be cancelled (the saga refunds a charge that was made).
// Cancelling an order again writes nothing and returns the first cancel's
// event with Replayed set. An unknown id is ErrOrderNotFound.
func CancelOrder(ctx context.Context, db DB, id uuid.UUID, opts ...Option) (CancelOrderResult, error) {
	o := collect(opts)
	var res CancelOrderResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		if res, err = CancelOrderTx(ctx, tx, id, opts...); err != nil || res.Replayed {
			return err
		}
		return o.beforeCommit(ctx)
	})
	if err != nil {
		return CancelOrderResult{}, err
	}
	return res, nil
}

// CancelOrderTx is [CancelOrder] inside the caller's transaction. The order
// row stays locked until tx ends. Of opts, only [WithEnqueuer] applies.
func CancelOrderTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, opts ...Option) (CancelOrderResult, error) {
	o, err := qLockOrderForCancel.One(ctx, tx, orderIDArgs{ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return CancelOrderResult{}, ErrOrderNotFound
	}
	if err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: lock order %s: %w", id, err)
	}
	if o.CancelEventID != nil {
		if o.CancelSequence != nil {
			return CancelOrderResult{OrderID: id, EventID: *o.CancelEventID, AggregateSequence: *o.CancelSequence, Replayed: true}, nil
		}
		return replayCancel(ctx, tx, id, *o.CancelEventID)
	}

	ev, err := outbox.NewEvent(AggregateType, id.String(), EventOrderCancelled, OrderCancelledVersion, OrderCancelled{
		OrderID:        id.String(),
		CreatedEventID: o.CreatedEventID.String(),
	})
	if err != nil {
		return CancelOrderResult{}, err
	}
	out, err := collect(opts).enqueuer.Enqueue(ctx, tx, ev)
	if err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: enqueue OrderCancelled of order %s: %w", id, err)
	}
	// The sequence is stored with the order so a repeated cancel can answer
	// after retention cleanup has deleted the event row.
	if _, err := qMarkOrderCancelled.Exec(ctx, tx, markCancelledArgs{
		ID: id, CancelEventID: out[0].ID, CancelEventSequence: out[0].Sequence,
	}); err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: mark order %s cancelled: %w", id, err)
	}
	return CancelOrderResult{OrderID: id, EventID: out[0].ID, AggregateSequence: out[0].Sequence}, nil
}

// cancelLock is the order row as a cancel locks it.
type cancelLock struct {
	CreatedEventID uuid.UUID  `db:"created_event_id"`
	CancelEventID  *uuid.UUID `db:"cancel_event_id"`
	CancelSequence *int64     `db:"cancel_event_sequence"`
}

// replayCancel returns the first cancel's result for an order cancelled by
// event eventID before orders.cancel_event_sequence existed (and not
// backfilled because the event was already gone): the sequence comes from
// the event row, and is lost once cleanup deleted it. It is read in tx, after
// the order's lock: a statement of its own, so a new snapshot under READ
// COMMITTED, which sees the event the first cancel committed while this one
// waited for the lock.
func replayCancel(ctx context.Context, tx pgx.Tx, id, eventID uuid.UUID) (CancelOrderResult, error) {
	seq, err := outbox.EventSequence(ctx, tx, eventID)
	if errors.Is(err, outbox.ErrEventNotFound) {
		return CancelOrderResult{}, fmt.Errorf("%w (order %s, event %s)", ErrCancelEventPurged, id, eventID)
	}
	if err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: read cancel event %s of order %s: %w", eventID, id, err)
	}
	return CancelOrderResult{OrderID: id, EventID: eventID, AggregateSequence: seq, Replayed: true}, nil
}
