package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// TestWorkerWithoutTheKeyFailsTheTaskNotTheWorkflow: a worker that lacks
// the key a history was written with fails the workflow task, loudly and
// naming the key id, and the workflow keeps running; once a worker with the
// key (a rotated key list that still holds it) polls, the workflow goes on.
// A missing key must never fail a payment saga.
func TestWorkerWithoutTheKeyFailsTheTaskNotTheWorkflow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := devserver.Start(t, devserver.Options{})
	store := codec.NewMemoryStore()
	oldKey, newKey := codec.NewKeySpec("old-1"), codec.NewKeySpec("new-2")
	dial := func(spec string) client.Client {
		keys, err := codec.ParseKeys(spec)
		require.NoError(t, err)
		dc := codec.NewDataConverter(keys, codec.Options{Store: store, Subject: personal.Subject})
		c, err := client.Dial(client.Options{HostPort: srv.Address(), DataConverter: dc,
			FailureConverter: dc.FailureConverter()})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	starter := dial(oldKey)
	o := order{id: uuid.NewString(), created: uuid.NewString()}
	tq := "codec-worker-" + o.id[:8]
	_, err := starter.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: o.created, TaskQueue: tq, WorkflowTaskTimeout: 2 * time.Second},
		handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_visa"))
	require.NoError(t, err)

	wrong := worker.New(dial(newKey), tq, worker.Options{})
	Register(wrong)
	require.NoError(t, wrong.Start())
	reader := dial(newKey + "," + oldKey)
	var msg string
	require.Eventually(t, func() bool {
		it := reader.GetWorkflowHistory(ctx, o.created, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return false
			}
			if f := ev.GetWorkflowTaskFailedEventAttributes().GetFailure(); f != nil {
				converter.DecodeCommonFailureAttributes(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
					mustDC(t, newKey+","+oldKey, store).Codecs()...), f)
				msg = f.GetMessage()
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "the wrong worker fails the workflow task")
	require.Contains(t, msg, `"old-1"`, "the failure names the key id")
	d, err := reader.DescribeWorkflow(ctx, o.created, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.RawResponse.GetWorkflowExecutionInfo().GetStatus(), "the workflow is not failed")
	wrong.Stop()

	// The rotated key list (new first, old kept) reads it: the saga goes on
	// and schedules its first activity (no activity worker runs here).
	right := worker.New(reader, tq, worker.Options{})
	Register(right)
	require.NoError(t, right.Start())
	t.Cleanup(right.Stop)
	require.Eventually(t, func() bool {
		it := reader.GetWorkflowHistory(ctx, o.created, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return false
			}
			if ev.GetActivityTaskScheduledEventAttributes() != nil {
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "a worker with the key runs the saga")
	require.NoError(t, reader.TerminateWorkflow(ctx, o.created, "", "test done"))
}

func mustDC(t *testing.T, spec string, store codec.KeyStore) *codec.DataConverter {
	keys, err := codec.ParseKeys(spec)
	require.NoError(t, err)
	return codec.NewDataConverter(keys, codec.Options{Store: store})
}
