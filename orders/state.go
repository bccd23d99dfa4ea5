package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// OrderState is the order's authoritative state as the order table holds
// it: what a workflow asks before it charges, because a run is not always
// its event's first and knows nothing of what earlier runs did.
type OrderState struct {
	// Status is the projected status.
	Status Status `db:"status"`
	// CancelRequested is true once a cancel was accepted (the order has a
	// cancel event); Status becomes cancelled only when the cancel saga is
	// done.
	CancelRequested bool `db:"cancel_requested"`
	// PaymentIntentID is the projected charge, "" while there is none.
	PaymentIntentID string `db:"payment_intent_id"`
	// RefundID is the projected refund, "" while there is none.
	RefundID string `db:"refund_id"`
	// AppliedSequence is the projection's position in the order's event
	// stream.
	AppliedSequence int64 `db:"applied_sequence"`
}

// State reads the order's state, or returns [ErrOrderNotFound].
func State(ctx context.Context, db DB, id uuid.UUID) (OrderState, error) {
	s, err := qGetOrderState.One(ctx, db, orderIDArgs{ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return OrderState{}, ErrOrderNotFound
	}
	if err != nil {
		return OrderState{}, fmt.Errorf("orders: read state of order %s: %w", id, err)
	}
	return s, nil
}
