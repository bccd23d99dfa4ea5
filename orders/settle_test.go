package orders

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// settle runs SettleSkippedTx in its own transaction, as outboxctl skip does
// next to the skip itself.
func (b testBundle) settle(t *testing.T, aggregateType, aggregateID string, seq int64) error {
	t.Helper()
	return pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		return SettleSkippedTx(b.ctx, tx, aggregateType, aggregateID, seq)
	})
}

// projection reads the order's place in its stream.
func (b testBundle) projection(t *testing.T, id uuid.UUID) (applied int64, skipped []int64) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT applied_sequence, skipped_sequences FROM orders WHERE id = $1`, id).
		Scan(&applied, &skipped))
	return applied, skipped
}

// TestSettleSkippedTx: a skipped sequence is recorded, and applied_sequence
// moves over every skipped sequence that directly follows it, in whatever
// order the skips come; a skip further ahead waits for the events before it.
func TestSettleSkippedTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	id := created.OrderID

	require.NoError(t, b.settle(t, AggregateType, id.String(), 3))
	applied, skipped := b.projection(t, id)
	require.EqualValues(t, 0, applied, "1 and 2 are still open")
	require.Equal(t, []int64{3}, skipped)

	require.NoError(t, b.settle(t, AggregateType, id.String(), 2))
	require.NoError(t, b.settle(t, AggregateType, id.String(), 2), "settling twice changes nothing")
	applied, skipped = b.projection(t, id)
	require.EqualValues(t, 0, applied)
	require.Equal(t, []int64{2, 3}, skipped)

	require.NoError(t, b.settle(t, AggregateType, id.String(), 1))
	applied, skipped = b.projection(t, id)
	require.EqualValues(t, 3, applied, "1, 2 and 3 are all skipped")
	require.Equal(t, []int64{1, 2, 3}, skipped)

	require.NoError(t, b.settle(t, AggregateType, id.String(), 5))
	applied, _ = b.projection(t, id)
	require.EqualValues(t, 3, applied, "4 is still open")
}

// TestSettleSkippedTxOtherAggregates: only orders are settled; an order
// event without its order is an error, which rolls the caller's skip back.
func TestSettleSkippedTxOtherAggregates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.settle(t, "invoice", "inv-1", 2), "not an order: nothing to settle")

	err := b.settle(t, AggregateType, uuid.NewString(), 2)
	require.ErrorIs(t, err, ErrOrderNotFound)
	err = b.settle(t, AggregateType, "o-1", 2)
	require.ErrorIs(t, err, ErrOrderNotFound)
	require.ErrorContains(t, err, `"o-1" is not an order id`)
}
