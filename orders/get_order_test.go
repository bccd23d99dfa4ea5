package orders

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
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
	outboxtest.Force(t, b.pool, outboxtest.Match{ID: created.EventID}, outboxtest.SetPublished(0))
	o, err = GetOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.NotNil(t, o.Events[0].PublishedAt)
	require.Equal(t, created.EventID.String(), *o.Events[0].WorkflowID, "workflow ID = event_id")
	require.Nil(t, o.Events[1].WorkflowID)

	// Retention cleanup deleted the events: the order shows none, as an
	// empty list.
	require.EqualValues(t, 2, outboxtest.DeleteEvents(t, b.pool, outboxtest.Match{}))
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
