package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/bench/benchdb"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TestBareStartIsThePublishersRequest holds handoff_ratio's baseline to what
// it claims to be: the relay's own request without the relay. One order's
// event goes through temporalpub.Publisher and one bare start through
// startRequest, on a dev server; the server's record of both starts must
// differ only where two orders differ (their ids and times).
func TestBareStartIsThePublishersRequest(t *testing.T) {
	srv := devserver.Start(t, devserver.Options{})
	tc, err := client.Dial(srv.ClientOptions("default"))
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	taskQueue := "bare-start-" + uuid.NewString()
	b := &bench{tc: tc, namespace: "default", taskQueue: taskQueue}

	pub, err := temporalpub.New(tc, client.Options{Namespace: "default"}, temporalpub.Config{TaskQueue: taskQueue, Routes: routes.Orders()})
	require.NoError(t, err)
	id := uuid.Must(uuid.NewV7())
	payload, err := json.Marshal(orders.OrderCreated{
		OrderID: id.String(), CustomerEmail: "bench@example.com", Currency: "usd",
		PaymentMethod: "pm_card_visa", Amount: 2500, Items: benchdb.Order().Items,
	})
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, outbox.Event{
		ID: id, Type: orders.EventOrderCreated, AggregateType: orders.AggregateType, AggregateID: id.String(),
		Sequence: 1, SchemaVersion: orders.OrderCreatedVersion, Payload: payload, OccurredAt: time.Now(),
	}))
	relayed := startedEvent(ctx, t, tc, id.String())

	opts, in, err := b.startRequest() // what startOne sends
	require.NoError(t, err)
	_, err = tc.ExecuteWorkflow(ctx, opts, handoff.OrderCreatedWorkflowName, in)
	require.NoError(t, err)
	bare := startedEvent(ctx, t, tc, opts.ID)

	require.Equal(t, relayed.WorkflowType.GetName(), bare.WorkflowType.GetName())
	require.Equal(t, relayed.TaskQueue.GetName(), bare.TaskQueue.GetName())
	require.Equal(t, keys(relayed.Memo.GetFields()), keys(bare.Memo.GetFields()), "memo fields")
	for k, v := range relayed.Memo.GetFields() {
		if k != "aggregate_id" {
			require.Equal(t, string(v.GetData()), string(bare.Memo.GetFields()[k].GetData()), "memo %s", k)
		}
	}
	require.Equal(t, keys(relayed.SearchAttributes.GetIndexedFields()), keys(bare.SearchAttributes.GetIndexedFields()), "search attributes")
	require.Len(t, bare.Input.GetPayloads(), len(relayed.Input.GetPayloads()))
	var relayedIn, bareIn map[string]any
	require.NoError(t, json.Unmarshal(relayed.Input.GetPayloads()[0].GetData(), &relayedIn))
	require.NoError(t, json.Unmarshal(bare.Input.GetPayloads()[0].GetData(), &bareIn))
	require.Equal(t, keys(relayedIn), keys(bareIn), "input fields")
	require.Equal(t, relayedIn["Delivery"], bareIn["Delivery"], "input delivery")
	// The same fields, and values of the same lengths but for the times'
	// fractions of a second: the bytes the server stores differ by a few.
	require.InDelta(t, len(relayed.Input.GetPayloads()[0].GetData()), len(bare.Input.GetPayloads()[0].GetData()), 4, "input size")
}

// startedEvent is the WorkflowExecutionStarted event of workflow id.
func startedEvent(ctx context.Context, t *testing.T, tc client.Client, id string) *historypb.WorkflowExecutionStartedEventAttributes {
	t.Helper()
	it := tc.GetWorkflowHistory(ctx, id, "", false, 0)
	require.True(t, it.HasNext(), "workflow %s has no history", id)
	e, err := it.Next()
	require.NoError(t, err)
	return e.GetWorkflowExecutionStartedEventAttributes()
}

func keys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}
