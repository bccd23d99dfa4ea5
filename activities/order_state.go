package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/orders"
)

// OrderStateInput names the order whose state a workflow asks for.
type OrderStateInput struct {
	// OrderID is the order's id (a UUID), the aggregate id of its events.
	OrderID string `json:"order_id"`
}

// OrderStateResult is the order's authoritative state, from the orders
// table (orders.State).
type OrderStateResult struct {
	// Status is one of the orders.Status* values.
	Status string `json:"status"`
	// CancelRequested: the order has a cancel event; Status becomes
	// cancelled only when the cancel saga is done.
	CancelRequested bool `json:"cancel_requested"`
	// PaymentIntentID is the projected charge, "" while there is none.
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	// RefundID is the projected refund, "" while there is none.
	RefundID string `json:"refund_id,omitempty"`
	// AppliedSequence is the projection's position in the order's events.
	AppliedSequence int64 `json:"applied_sequence"`
}

// GetOrderState reads the order's state from our database, which the
// workflows consult before any charge: a run is not always its event's
// first (an operator's replay, a re-delivery) and cannot otherwise know that
// the order was cancelled or charged meanwhile. It only reads, so it is safe
// to retry. A missing order is a non-retryable OrderNotFound error.
func (a *Activities) GetOrderState(ctx context.Context, in OrderStateInput) (OrderStateResult, error) {
	if a.DB == nil {
		return OrderStateResult{}, errors.New("activities: no database configured (set DATABASE_URL)")
	}
	id, err := uuid.Parse(in.OrderID)
	if err != nil {
		return OrderStateResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("order %q does not exist: not an order id", in.OrderID), ErrTypeOrderNotFound, nil)
	}
	st, err := orders.State(ctx, a.DB, id)
	if errors.Is(err, orders.ErrOrderNotFound) {
		return OrderStateResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("order %s does not exist", in.OrderID), ErrTypeOrderNotFound, err)
	}
	if err != nil {
		return OrderStateResult{}, err
	}
	return OrderStateResult{
		Status:          string(st.Status),
		CancelRequested: st.CancelRequested,
		PaymentIntentID: st.PaymentIntentID,
		RefundID:        st.RefundID,
		AppliedSequence: st.AppliedSequence,
	}, nil
}
