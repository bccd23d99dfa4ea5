package activities

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
)

// GetOrderState reports the order's row as the projection and the order
// service leave it, at each point a workflow may ask.
func TestGetOrderState(t *testing.T) {
	t.Parallel()
	f, created := setupOrderProjection(t)
	ctx := ctxT(t)
	state := func() OrderStateResult {
		t.Helper()
		st, err := f.acts.GetOrderState(ctx, OrderStateInput{OrderID: f.orderID})
		require.NoError(t, err)
		return st
	}

	require.Equal(t, OrderStateResult{Status: string(orders.StatusPending)}, state())

	_, err := f.project(t, f.created, 1, StepPaid)
	require.NoError(t, err)
	require.Equal(t, OrderStateResult{Status: string(orders.StatusPaid), PaymentIntentID: "pi_1"}, state())

	cancel, err := orders.CancelOrder(ctx, f.pool, created.OrderID)
	require.NoError(t, err)
	require.Equal(t, OrderStateResult{Status: string(orders.StatusPaid), CancelRequested: true, PaymentIntentID: "pi_1"}, state(),
		"a requested cancel shows before the cancel saga is done")

	_, err = f.project(t, f.created, 0, StepSagaStopped)
	require.NoError(t, err)
	_, err = f.project(t, cancel.EventID.String(), 0, StepCancelled)
	require.NoError(t, err)
	require.Equal(t, OrderStateResult{Status: string(orders.StatusCancelled), CancelRequested: true, PaymentIntentID: "pi_1",
		RefundID: "re_1", AppliedSequence: 2}, state())
}

// A missing order (or something that cannot be an order id) is final.
func TestGetOrderStateNotFound(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)
	_, err := f.acts.GetOrderState(ctxT(t), OrderStateInput{OrderID: uuid.NewString()})
	requireAppError(t, err, ErrTypeOrderNotFound, true)
	_, err = f.acts.GetOrderState(ctxT(t), OrderStateInput{OrderID: "o-1"})
	requireAppError(t, err, ErrTypeOrderNotFound, true)

	_, err = (&Activities{}).GetOrderState(ctxT(t), OrderStateInput{OrderID: f.orderID})
	require.ErrorContains(t, err, "no database configured")
}
