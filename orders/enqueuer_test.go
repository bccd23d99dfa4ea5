package orders

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// TestWithEnqueuerWritesTheLog: with a log enqueuer, an order's creation
// (idempotent or not) and its cancel write their events to outbox_log, in
// the order's sequence, and nothing to outbox_events; without one they go
// to outbox_events as before.
func TestWithEnqueuerWritesTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logq := WithEnqueuer(outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}))

	created, err := CreateOrder(b.ctx, b.pool, validParams(), logq)
	require.NoError(t, err)
	cancelled, err := CancelOrder(b.ctx, b.pool, created.OrderID, logq)
	require.NoError(t, err)
	stored, err := CreateOrderIdempotent(b.ctx, b.pool, "log-key-1", validParams(), logq)
	require.NoError(t, err)
	require.Equal(t, 201, stored.Status)

	type logged struct {
		ID       string
		Type     string
		Sequence int64
	}
	rows, err := b.pool.Query(b.ctx, `SELECT event_id::text, event_type, aggregate_sequence FROM outbox_log
		WHERE aggregate_id = $1 ORDER BY aggregate_sequence`, created.OrderID.String())
	require.NoError(t, err)
	var got []logged
	for rows.Next() {
		var l logged
		require.NoError(t, rows.Scan(&l.ID, &l.Type, &l.Sequence))
		got = append(got, l)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []logged{
		{created.EventID.String(), EventOrderCreated, 1},
		{cancelled.EventID.String(), EventOrderCancelled, 2},
	}, got)
	var inLog, inEvents int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM outbox_log), (SELECT count(*) FROM outbox_events)`).Scan(&inLog, &inEvents))
	require.Equal(t, 3, inLog, "both orders' events")
	require.Zero(t, inEvents, "nothing in outbox_events")

	// GET /orders/{id} lists the order's events from the log, unpublished
	// while no relay ran.
	o, err := GetOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.Len(t, o.Events, 2)
	require.Equal(t, created.EventID, o.Events[0].EventID)
	require.Equal(t, cancelled.EventID, o.Events[1].EventID)
	require.Nil(t, o.Events[1].PublishedAt)

	_, err = CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	require.Equal(t, 1, b.counts(t).Events, "without an enqueuer: outbox_events")
}
