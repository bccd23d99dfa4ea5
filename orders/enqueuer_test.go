package orders

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestWithEnqueuerWritesTheLog: with a log enqueuer, an order's creation
// (idempotent or not) and its cancel write their events to the log, in
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

	// outbox_events holds none of them; the order's lookup finds them, so
	// they are in the log, in the order's sequence.
	require.Empty(t, outboxtest.Events(t, b.pool, outboxtest.Match{}), "nothing in outbox_events")
	events, err := outbox.AggregateEvents(b.ctx, b.pool, AggregateType, created.OrderID.String())
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, [2]uuid.UUID{created.EventID, cancelled.EventID}, [2]uuid.UUID{events[0].ID, events[1].ID})
	require.Equal(t, [2]int64{1, 2}, [2]int64{events[0].Sequence, events[1].Sequence})
	var idem CreateOrderResult
	require.NoError(t, json.Unmarshal(stored.Body, &idem))
	events, err = outbox.AggregateEvents(b.ctx, b.pool, AggregateType, idem.OrderID.String())
	require.NoError(t, err)
	require.Len(t, events, 1, "the idempotent create's event")
	require.Equal(t, idem.EventID, events[0].ID)

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
