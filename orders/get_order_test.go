package orders

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestGetOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	cancelled, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)

	o, err := GetOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.Equal(t, StatusPending, o.Status, "cancelled only once the cancel saga is done")
	require.True(t, o.CancelRequested)
	require.Nil(t, o.PaymentIntentID)
	require.Nil(t, o.RefundID)
	require.Equal(t, created.EventID, o.CreatedEventID)
	require.Equal(t, &cancelled.EventID, o.CancelEventID)
	require.Len(t, o.Events, 2)
	require.Equal(t, EventOrderCreated, o.Events[0].EventType)
	require.Equal(t, EventOrderCancelled, o.Events[1].EventType)
	for i, e := range o.Events {
		require.Equal(t, int64(i+1), e.AggregateSequence)
		require.Nil(t, e.PublishedAt, "not published yet")
		require.Nil(t, e.WorkflowID, "no workflow before publication")
	}

	// Once the relay marks an event published, its workflow ID shows.
	_, err = b.pool.Exec(b.ctx, "UPDATE outbox_events SET published_at = now() WHERE event_id = $1", created.EventID)
	require.NoError(t, err)
	o, err = GetOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.NotNil(t, o.Events[0].PublishedAt)
	require.Equal(t, created.EventID.String(), *o.Events[0].WorkflowID, "workflow ID = event_id")
	require.Nil(t, o.Events[1].WorkflowID)

	// Retention cleanup deleted the events: the order shows none, as an
	// empty list.
	_, err = b.pool.Exec(b.ctx, "DELETE FROM outbox_events")
	require.NoError(t, err)
	o, err = GetOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.NotNil(t, o.Events)
	require.Empty(t, o.Events)
	body, err := json.Marshal(o)
	require.NoError(t, err)
	require.Contains(t, string(body), `"events":[]`)

	_, err = GetOrder(b.ctx, b.pool, uuid.New())
	require.ErrorIs(t, err, ErrOrderNotFound)
}
