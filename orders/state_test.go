package orders

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestState reads the order's own columns: the requested cancel shows at
// once, the projection's changes as they apply.
func TestState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	st, err := State(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.Equal(t, OrderState{Status: StatusPending}, st)

	_, err = CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	// What the projection writes once the cancel saga refunded the charge.
	_, err = b.pool.Exec(b.ctx, `UPDATE orders SET status = 'cancelled', payment_intent_id = 'pi_1', refund_id = 're_1',
		applied_sequence = 2 WHERE id = $1`, created.OrderID)
	require.NoError(t, err)
	st, err = State(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.Equal(t, OrderState{Status: StatusCancelled, CancelRequested: true, PaymentIntentID: "pi_1", RefundID: "re_1",
		AppliedSequence: 2}, st)

	_, err = State(b.ctx, b.pool, uuid.New())
	require.ErrorIs(t, err, ErrOrderNotFound)
}
