package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/failpoints"
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
func CancelOrder(ctx context.Context, db DB, id uuid.UUID) (CancelOrderResult, error) {
	var res CancelOrderResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		if res, err = CancelOrderTx(ctx, tx, id); err != nil || res.Replayed {
			return err
		}
		return failpoints.Inject(ctx, failpoints.OrdersBeforeCommit)
	})
	if err != nil {
		return CancelOrderResult{}, err
	}
	return res, nil
}

// CancelOrderTx is [CancelOrder] inside the caller's transaction. The order
// row stays locked until tx ends.
func CancelOrderTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (CancelOrderResult, error) {
	var (
		createdEventID uuid.UUID
		cancelEventID  *uuid.UUID
		cancelSequence *int64
	)
	err := tx.QueryRow(ctx, queries.Get("LockOrderForCancel"), id).Scan(&createdEventID, &cancelEventID, &cancelSequence)
	if errors.Is(err, pgx.ErrNoRows) {
		return CancelOrderResult{}, ErrOrderNotFound
	}
	if err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: lock order %s: %w", id, err)
	}
	if cancelEventID != nil {
		if cancelSequence != nil {
			return CancelOrderResult{OrderID: id, EventID: *cancelEventID, AggregateSequence: *cancelSequence, Replayed: true}, nil
		}
		return replayCancel(ctx, tx, id, *cancelEventID)
	}

	ev, err := outbox.NewEvent(AggregateType, id.String(), EventOrderCancelled, OrderCancelledVersion, OrderCancelled{
		OrderID:        id.String(),
		CreatedEventID: createdEventID.String(),
	})
	if err != nil {
		return CancelOrderResult{}, err
	}
	out, err := outbox.Enqueue(ctx, tx, ev)
	if err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: enqueue OrderCancelled of order %s: %w", id, err)
	}
	// The sequence is stored with the order so a repeated cancel can answer
	// after retention cleanup has deleted the event row.
	if _, err := tx.Exec(ctx, queries.Get("MarkOrderCancelled"), id, out[0].ID, out[0].Sequence); err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: mark order %s cancelled: %w", id, err)
	}
	return CancelOrderResult{OrderID: id, EventID: out[0].ID, AggregateSequence: out[0].Sequence}, nil
}

// replayCancel returns the first cancel's result for an order cancelled by
// event eventID before orders.cancel_event_sequence existed: the sequence
// comes from the event row, and is lost once cleanup deleted it.
func replayCancel(ctx context.Context, tx pgx.Tx, id, eventID uuid.UUID) (CancelOrderResult, error) {
	var seq int64
	err := tx.QueryRow(ctx, queries.Get("GetEventSequence"), eventID).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return CancelOrderResult{}, fmt.Errorf("%w (order %s, event %s)", ErrCancelEventPurged, id, eventID)
	}
	if err != nil {
		return CancelOrderResult{}, fmt.Errorf("orders: read cancel event %s of order %s: %w", eventID, id, err)
	}
	return CancelOrderResult{OrderID: id, EventID: eventID, AggregateSequence: seq, Replayed: true}, nil
}
