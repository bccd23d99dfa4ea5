package temporalpub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// replayProbe is a stand-in for OrderCreatedWorkflow, registered under its
// name on the test's own task queue: it completes, fails or blocks forever
// by the prefix of the order ID, so each terminal state can be replayed.
func replayProbe(ctx workflow.Context, in temporalpub.EventInput) error {
	switch {
	case strings.HasPrefix(in.AggregateID, "fail-"):
		return sdktemporal.NewNonRetryableApplicationError("probe fails on purpose", "ProbeFailure", nil)
	case strings.HasPrefix(in.AggregateID, "block-"):
		workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
	}
	return nil
}

// TestReplaySemanticsAgainstTemporal: events whose workflows completed,
// failed, and were terminated are replayed through the real publisher and a
// dev server. The completed workflow stays one run (same run ID, one
// execution in visibility; the refused start was the acknowledgement); the
// failed and the terminated ones get a new run under the same workflow ID.
// Every replay is marked published again.
func TestReplaySemanticsAgainstTemporal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.New(t)
	tq := taskQueue(t)
	tc := temporal.Client()

	w := worker.New(tc, tq, worker.Options{})
	w.RegisterWorkflowWithOptions(replayProbe, workflow.RegisterOptions{Name: orderCreatedWorkflow})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	// No payload validation: the probe ignores the payload.
	routes := map[string]temporalpub.Route{"OrderCreated": {Workflow: orderCreatedWorkflow}}
	newRelay := func() {
		r, err := outbox.NewRelay(pool, newPublisher(t, tc, temporalpub.Config{TaskQueue: tq, Routes: routes}),
			outbox.RelayConfig{Logger: quietLogger(), PollInterval: 100 * time.Millisecond})
		require.NoError(t, err)
		runRelay(t, r)
	}
	suffix := uuid.NewString()
	completed := testdb.Enqueue(t, pool, orderCreated(t, "complete-"+suffix))[0]
	failed := testdb.Enqueue(t, pool, orderCreated(t, "fail-"+suffix))[0]
	terminated := testdb.Enqueue(t, pool, orderCreated(t, "block-"+suffix))[0]
	all := []outbox.Event{completed, failed, terminated}
	newRelay()
	require.Eventually(t, func() bool { return allPublished(pool, all) }, 30*time.Second, 20*time.Millisecond)

	waitStatus(t, completed.ID, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	waitStatus(t, failed.ID, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED)
	waitStatus(t, terminated.ID, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	require.NoError(t, tc.TerminateWorkflow(ctx, terminated.ID.String(), "", "test: make it a failed run"))
	waitStatus(t, terminated.ID, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	firstRun := map[uuid.UUID]string{}
	for _, e := range all {
		firstRun[e.ID] = describe(t, e.ID).GetExecution().GetRunId()
	}

	n, err := outboxops.Replay(ctx, pool, outboxops.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Eventually(t, func() bool { return allPublished(pool, all) && noReplayPending(pool) }, 30*time.Second, 20*time.Millisecond,
		"every replay acknowledged: a refused start for the completed workflow, a new run for the others")

	// The failed and the terminated workflows were started again...
	for _, e := range []outbox.Event{failed, terminated} {
		require.NotEqual(t, firstRun[e.ID], describe(t, e.ID).GetExecution().GetRunId(), "a new run for %s", e.AggregateID)
		runsOf(t, e.ID, 2)
	}
	waitStatus(t, failed.ID, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED)
	waitStatus(t, terminated.ID, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	require.NoError(t, tc.TerminateWorkflow(ctx, terminated.ID.String(), "", "test done"))

	// ...while the completed one stays one run: visibility has caught up
	// with the new runs above, and still lists one execution for it.
	info := describe(t, completed.ID)
	require.Equal(t, firstRun[completed.ID], info.GetExecution().GetRunId())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, info.GetStatus())
	runsOf(t, completed.ID, 1)
}

// waitStatus waits until the workflow of event id reaches status.
func waitStatus(t *testing.T, id uuid.UUID, status enumspb.WorkflowExecutionStatus) {
	t.Helper()
	var last enumspb.WorkflowExecutionStatus
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		desc, err := temporal.Client().DescribeWorkflow(ctx, id.String(), "")
		if err != nil {
			return false
		}
		last = desc.RawResponse.GetWorkflowExecutionInfo().GetStatus()
		return last == status
	}, 30*time.Second, 50*time.Millisecond, "workflow %s: want %s, last %s", id, status, last)
}

// runsOf waits until visibility lists exactly want executions of event id.
func runsOf(t *testing.T, id uuid.UUID, want int64) {
	t.Helper()
	var got int64
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := temporal.Client().CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = %q", id.String()),
		})
		got = resp.GetCount()
		return err == nil && got == want
	}, 30*time.Second, 100*time.Millisecond, "runs of workflow %s: want %d, last count %d", id, want, got)
}

// noReplayPending reports whether every replay was acknowledged (the mark
// clears the flag); safe inside Eventually.
func noReplayPending(pool *pgxpool.Pool) bool {
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE replay_requested_at IS NOT NULL`).Scan(&n)
	return err == nil && n == 0
}
