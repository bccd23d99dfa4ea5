package temporalpub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/temporalpub"
	"github.com/outflow/outflow/outbox/temporalpub/eventsignal"
)

const (
	sinkWorkflow = "SignalSink"
	sinkSignal   = "outbox-event"
	sinkEvent    = "StockReserved"
)

// sinkInput is the signal sink's input; a Signal-With-Start starts it with
// none (the zero value).
type sinkInput struct {
	Events  eventsignal.State `json:"events"`
	Handled []string          `json:"handled,omitempty"`
	// ContinueAfter makes each run continue as new once it handled that
	// many events; 0: never.
	ContinueAfter int `json:"continue_after,omitempty"`
}

type sinkStatus struct {
	Handled    []string
	Duplicates int
}

// signalSink is a workflow a signal route targets: it takes the events
// through an eventsignal.Receiver set up first thing, records the IDs it
// handled (query "status"), completes on an event whose payload says
// "close", and continues as new, carrying its receiver's state.
func signalSink(ctx workflow.Context, in sinkInput) error {
	events := eventsignal.New[temporalpub.EventInput](ctx, sinkSignal, in.Events, eventsignal.Options{})
	handled := in.Handled
	if err := workflow.SetQueryHandler(ctx, "status", func() (sinkStatus, error) {
		return sinkStatus{Handled: handled, Duplicates: events.Duplicates()}, nil
	}); err != nil {
		return err
	}
	thisRun := 0
	for {
		ev, ok := events.Receive(ctx)
		if !ok {
			return ctx.Err()
		}
		handled = append(handled, ev.EventID)
		thisRun++
		if bytes.Contains(ev.Payload, []byte(`"close"`)) {
			return nil
		}
		if in.ContinueAfter > 0 && thisRun >= in.ContinueAfter {
			events.Drain(func(ev temporalpub.EventInput) { handled = append(handled, ev.EventID) })
			return workflow.NewContinueAsNewError(ctx, sinkWorkflow, sinkInput{Events: events.State(), Handled: handled, ContinueAfter: in.ContinueAfter})
		}
	}
}

// sinkBundle is a signal route's test setup: a worker of the sink on its
// own task queue and a publisher whose route signals the workflow
// "sink-AGGREGATE_ID".
type sinkBundle struct {
	tq  string
	pub *temporalpub.Publisher
}

func setupSink(t *testing.T) sinkBundle {
	t.Helper()
	tq := taskQueue(t)
	w := worker.New(temporal.Client(), tq, worker.Options{})
	w.RegisterWorkflowWithOptions(signalSink, workflow.RegisterOptions{Name: sinkWorkflow})
	w.RegisterWorkflowWithOptions(func(workflow.Context, temporalpub.EventInput) error { return nil },
		workflow.RegisterOptions{Name: "LateStockEvent"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	pub := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Logger: quietLogger(), Routes: temporalpub.Routes{
		sinkEvent: {Workflow: sinkWorkflow, Signal: sinkSignal, WorkflowID: sinkID},
	}})
	return sinkBundle{tq: tq, pub: pub}
}

func sinkID(e outbox.Event) string { return "sink-" + e.AggregateID }

func stockEvent(t *testing.T, aggregateID, note string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent("stock", aggregateID, sinkEvent, 1, map[string]string{"note": note})
	require.NoError(t, err)
	e.ID, e.OccurredAt = uuid.New(), time.Now()
	return e
}

// waitSink waits until the sink's latest run reports want.
func waitSink(t *testing.T, workflowID string, want sinkStatus) {
	t.Helper()
	var got sinkStatus
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := temporal.Client().QueryWorkflow(ctx, workflowID, "", "status")
		if err != nil || v.Get(&got) != nil {
			return false
		}
		return len(got.Handled) == len(want.Handled) && got.Duplicates == want.Duplicates
	}, 30*time.Second, 50*time.Millisecond, "sink %s: want %+v", workflowID, want)
	require.Equal(t, want, got)
}

func ids(events ...outbox.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID.String()
	}
	return out
}

// TestSignalToARunningWorkflow: the event reaches the running workflow as
// a signal carrying its envelope; no workflow is started for it.
func TestSignalToARunningWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSink(t)
	agg := uuid.NewString()
	run, err := temporal.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sink-" + agg, TaskQueue: b.tq}, sinkWorkflow, sinkInput{})
	require.NoError(t, err)
	e := stockEvent(t, agg, "reserved")
	require.NoError(t, b.pub.Publish(ctx, e))
	waitSink(t, "sink-"+agg, sinkStatus{Handled: ids(e)})
	require.Equal(t, run.GetRunID(), describeID(t, "sink-"+agg).GetExecution().GetRunId(), "the same run took the signal")
	countOn(t, b.tq, 1)
}

// TestSignalWithStart: no workflow of the ID exists yet; the signal starts
// one of the route's type on its task queue, with the start's summary and
// memo, and the event, buffered before the workflow's first task, is the
// first thing its receiver hands out.
func TestSignalWithStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSink(t)
	agg := uuid.NewString()
	e := stockEvent(t, agg, "reserved")
	require.NoError(t, b.pub.Publish(ctx, e))
	waitSink(t, "sink-"+agg, sinkStatus{Handled: ids(e)})
	info := describeID(t, "sink-"+agg)
	require.Equal(t, sinkWorkflow, info.GetType().GetName())
	require.Equal(t, b.tq, info.GetTaskQueue())
	require.Equal(t, sinkEvent, memoValue[string](t, info, "event_type"))
	require.Equal(t, agg, memoValue[string](t, info, "aggregate_id"))
	desc, err := temporal.Client().DescribeWorkflow(ctx, "sink-"+agg, "")
	require.NoError(t, err)
	summary, err := desc.GetStaticSummary()
	require.NoError(t, err)
	require.Equal(t, sinkEvent+" stock "+agg, summary, "the route's default summary")
	countOn(t, b.tq, 1)
}

// TestSignalDeliveredTwiceIsHandledOnce: the relay's at-least-once
// re-delivery (Publish called again for the same event, as after a lost
// mark) reaches the workflow as a second signal, which Temporal does not
// deduplicate; the receiver drops it.
func TestSignalDeliveredTwiceIsHandledOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSink(t)
	agg := uuid.NewString()
	e := stockEvent(t, agg, "reserved")
	require.NoError(t, b.pub.Publish(ctx, e))
	require.NoError(t, b.pub.Publish(ctx, e), "the duplicate is accepted: Temporal takes any signal")
	waitSink(t, "sink-"+agg, sinkStatus{Handled: ids(e), Duplicates: 1})
	countOn(t, b.tq, 1)
}

// TestSignalsKeepPerAggregateOrder: two aggregates' events, enqueued in
// sequence and relayed with several publishes in flight, reach each
// aggregate's workflow in sequence order.
func TestSignalsKeepPerAggregateOrder(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	b := setupSink(t)
	byAgg := map[string][]outbox.Event{}
	var all []outbox.Event
	aggs := []string{uuid.NewString(), uuid.NewString()}
	for i := range 5 {
		for _, agg := range aggs {
			e := testdb.Enqueue(t, pool, stockEvent(t, agg, "step"))[0]
			require.Equal(t, int64(i+1), e.Sequence)
			byAgg[agg] = append(byAgg[agg], e)
			all = append(all, e)
		}
	}
	r, err := outbox.NewRelay(pool, b.pub, outbox.RelayConfig{Logger: quietLogger(), MaxInFlight: 8, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	runRelay(t, r)
	require.Eventually(t, func() bool { return allPublished(pool, all) }, 30*time.Second, 20*time.Millisecond)
	for _, agg := range aggs {
		waitSink(t, "sink-"+agg, sinkStatus{Handled: ids(byAgg[agg]...)})
	}
	countOn(t, b.tq, len(aggs))
}

// TestSignalToAClosedWorkflowIsQuarantined: the target completed; a later
// event is not delivered into it and does not start it again (that could
// re-run a closed saga); Temporal's refusal is the event's permanent fault,
// and the relay quarantines it at once with an error naming the workflow.
func TestSignalToAClosedWorkflowIsQuarantined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.New(t)
	b := setupSink(t)
	agg := uuid.NewString()
	closing := stockEvent(t, agg, "close")
	require.NoError(t, b.pub.Publish(ctx, closing))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, temporal.Client().GetWorkflow(wctx, "sink-"+agg, "").Get(wctx, nil))
	closedRun := describeID(t, "sink-"+agg).GetExecution().GetRunId()

	late := stockEvent(t, agg, "late")
	err := b.pub.Publish(ctx, late)
	require.ErrorIs(t, err, outbox.ErrPermanent)
	require.True(t, temporalpub.IsAlreadyStarted(err), "Temporal's refusal is kept in the chain: %v", err)
	// The documented price: a re-delivery of the event the workflow took
	// before it closed is refused alike, for an operator to skip.
	require.ErrorIs(t, b.pub.Publish(ctx, closing), outbox.ErrPermanent)

	queued := testdb.Enqueue(t, pool, stockEvent(t, agg, "late"))[0]
	r, err := outbox.NewRelay(pool, b.pub, outbox.RelayConfig{Logger: quietLogger(), PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	runRelay(t, r)
	var attempts int
	var lastError string
	require.Eventually(t, func() bool {
		var q bool
		err := pool.QueryRow(ctx, `SELECT quarantined_at IS NOT NULL, attempt_count, coalesce(last_error, '') FROM outbox_events WHERE event_id = $1`,
			queued.ID).Scan(&q, &attempts, &lastError)
		return err == nil && q
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, attempts, "quarantined at once")
	require.Contains(t, lastError, "sink-"+agg)
	require.Contains(t, lastError, "already closed")

	info := describeID(t, "sink-"+agg)
	require.Equal(t, closedRun, info.GetExecution().GetRunId(), "no new run")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, info.GetStatus())
	countOn(t, b.tq, 1)
}

// TestClosedWorkflowFallback: a route with ClosedWorkflow starts a
// workflow of the late event's own (ID = the event's, its EventInput the
// input) instead of quarantining it; the closed target stays one closed
// run, and a re-delivery of the late event is an absorbed duplicate start.
func TestClosedWorkflowFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSink(t)
	reg := prometheus.NewRegistry()
	pub := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: b.tq, Logger: quietLogger(), Registerer: reg, Routes: temporalpub.Routes{
		sinkEvent: {Workflow: sinkWorkflow, Signal: sinkSignal, WorkflowID: sinkID, ClosedWorkflow: "LateStockEvent"},
	}})
	agg := uuid.NewString()
	closing := stockEvent(t, agg, "close")
	require.NoError(t, pub.Publish(ctx, closing))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, temporal.Client().GetWorkflow(wctx, "sink-"+agg, "").Get(wctx, nil))
	closedRun := describeID(t, "sink-"+agg).GetExecution().GetRunId()

	late := stockEvent(t, agg, "late")
	require.NoError(t, pub.Publish(ctx, late))
	info := describe(t, late.ID)
	require.Equal(t, "LateStockEvent", info.GetType().GetName())
	require.Equal(t, b.tq, info.GetTaskQueue())
	require.Equal(t, temporalpub.DeliveryFirst, memoValue[string](t, info, "delivery"))
	require.Equal(t, agg, memoValue[string](t, info, "aggregate_id"))
	hist := temporal.Client().GetWorkflowHistory(ctx, late.ID.String(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	first, err := hist.Next()
	require.NoError(t, err)
	var in temporalpub.EventInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(first.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in))
	require.Equal(t, late.ID.String(), in.EventID, "the late event's own envelope is the input")

	require.NoError(t, pub.Publish(ctx, late), "a re-delivery")
	require.Equal(t, 1.0, promtest.Value(t, reg, "outbox_duplicate_starts_total"))
	sink := describeID(t, "sink-"+agg)
	require.Equal(t, closedRun, sink.GetExecution().GetRunId(), "the closed target was not run again")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, sink.GetStatus())
	countOn(t, b.tq, 2)

	_, err = temporalpub.New(nil, client.Options{}, temporalpub.Config{Routes: temporalpub.Routes{"X": {Workflow: "W", ClosedWorkflow: "L"}}})
	require.ErrorContains(t, err, "has a ClosedWorkflow but no Signal")
}

// signalOnly is the publisher of a route that only signals its target,
// never starts it (no Workflow), with closed, when not "", as its
// ClosedWorkflow.
func signalOnly(t *testing.T, b sinkBundle, closed string, reg prometheus.Registerer) *temporalpub.Publisher {
	t.Helper()
	return newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: b.tq, Logger: quietLogger(), Registerer: reg, Routes: temporalpub.Routes{
		sinkEvent: {Signal: sinkSignal, WorkflowID: sinkID, ClosedWorkflow: closed},
	}})
}

// forget deletes a closed workflow, as Temporal does once the namespace
// retention has passed, and waits until it is gone.
func forget(t *testing.T, workflowID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := temporal.Client().WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace:         client.DefaultNamespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !exists(t, workflowID) }, 30*time.Second, 50*time.Millisecond, "workflow %s forgotten", workflowID)
}

// exists reports whether Temporal has a run of the workflow ID on record.
func exists(t *testing.T, workflowID string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := temporal.Client().DescribeWorkflow(ctx, workflowID, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestSignalOnlyRoute: a route without Workflow signals a running target
// like any signal route, but never starts one: an event whose target does
// not exist starts the route's ClosedWorkflow (ID = the event's), and
// without one it is the event's permanent fault, never a start of the
// target from an empty input.
func TestSignalOnlyRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSink(t)
	pub := signalOnly(t, b, "LateStockEvent", nil)
	agg := uuid.NewString()
	run, err := temporal.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sink-" + agg, TaskQueue: b.tq}, sinkWorkflow, sinkInput{})
	require.NoError(t, err)
	e := stockEvent(t, agg, "reserved")
	require.NoError(t, pub.Publish(ctx, e))
	waitSink(t, "sink-"+agg, sinkStatus{Handled: ids(e)})
	require.Equal(t, run.GetRunID(), describeID(t, "sink-"+agg).GetExecution().GetRunId(), "the running target took the signal")
	require.False(t, exists(t, e.ID.String()), "no workflow of the event's own")

	never := uuid.NewString()
	orphan := stockEvent(t, never, "reserved")
	require.NoError(t, pub.Publish(ctx, orphan))
	require.False(t, exists(t, "sink-"+never), "a signal-only route never starts its target")
	require.Equal(t, "LateStockEvent", describe(t, orphan.ID).GetType().GetName())

	err = signalOnly(t, b, "", nil).Publish(ctx, stockEvent(t, never, "reserved"))
	require.ErrorIs(t, err, outbox.ErrPermanent)
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "Temporal's refusal is kept in the chain")
	require.ErrorContains(t, err, "sink-"+never)
	require.ErrorContains(t, err, "does not exist")
	require.False(t, exists(t, "sink-"+never))
	countOn(t, b.tq, 2)
}

// TestSignalToAForgottenTarget: the target completed and Temporal forgot it
// (the namespace retention; the test deletes it as the retention does).
// A late event of a signal-only route is taken as one for a closed target:
// it starts the route's ClosedWorkflow, and the target's ID has no new
// run; the relay's re-delivery of the event is an absorbed duplicate start.
func TestSignalToAForgottenTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSink(t)
	reg := prometheus.NewRegistry()
	pub := signalOnly(t, b, "LateStockEvent", reg)
	agg := uuid.NewString()
	_, err := temporal.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sink-" + agg, TaskQueue: b.tq}, sinkWorkflow, sinkInput{})
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, stockEvent(t, agg, "close")))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, temporal.Client().GetWorkflow(wctx, "sink-"+agg, "").Get(wctx, nil))

	late := stockEvent(t, agg, "late")
	require.NoError(t, pub.Publish(ctx, late), "the target closed within the retention")
	require.Equal(t, "LateStockEvent", describe(t, late.ID).GetType().GetName())

	forget(t, "sink-"+agg)
	later := stockEvent(t, agg, "later")
	require.NoError(t, pub.Publish(ctx, later))
	info := describe(t, later.ID)
	require.Equal(t, "LateStockEvent", info.GetType().GetName())
	require.Equal(t, b.tq, info.GetTaskQueue())
	require.False(t, exists(t, "sink-"+agg), "no new run of the forgotten target")

	require.NoError(t, pub.Publish(ctx, later), "a re-delivery")
	require.Equal(t, 1.0, promtest.Value(t, reg, "outbox_duplicate_starts_total"))
	require.False(t, exists(t, "sink-"+agg))
	countOn(t, b.tq, 2)
}

// TestDedupSurvivesContinueAsNew: the workflow continues as new after each
// event it handles, carrying its receiver's state; a re-delivery of the
// event the first run handled reaches the second run and is dropped there.
func TestDedupSurvivesContinueAsNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSink(t)
	agg := uuid.NewString()
	id := "sink-" + agg
	first, err := temporal.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: b.tq}, sinkWorkflow, sinkInput{ContinueAfter: 1})
	require.NoError(t, err)
	e1 := stockEvent(t, agg, "one")
	require.NoError(t, b.pub.Publish(ctx, e1))
	require.Eventually(t, func() bool {
		info := describeID(t, id)
		return info.GetExecution().GetRunId() != first.GetRunID()
	}, 30*time.Second, 50*time.Millisecond, "the first run continued as new")
	second := describeID(t, id).GetExecution().GetRunId()

	require.NoError(t, b.pub.Publish(ctx, e1), "the re-delivery")
	waitSink(t, id, sinkStatus{Handled: ids(e1), Duplicates: 1})
	require.Equal(t, second, describeID(t, id).GetExecution().GetRunId(), "the duplicate did not make the second run continue")

	e2 := stockEvent(t, agg, "two")
	require.NoError(t, b.pub.Publish(ctx, e2))
	waitSink(t, id, sinkStatus{Handled: ids(e1, e2), Duplicates: 1})
}

// TestSignalRouteValidation: a signal route needs a WorkflowID, a start
// route must not have one and needs a Workflow, which a signal route may
// go without; New names every bad route at once. An event whose WorkflowID
// is empty is quarantined.
func TestSignalRouteValidation(t *testing.T) {
	t.Parallel()
	_, err := temporalpub.New(nil, client.Options{}, temporalpub.Config{Routes: temporalpub.Routes{
		"A": {Workflow: "W", Signal: "s"},
		"B": {Workflow: "W", WorkflowID: sinkID},
		"C": {TaskQueue: "q"},
		"D": {Signal: "s", WorkflowID: sinkID},
	}})
	require.ErrorContains(t, err, `signal route of event type "A" has no WorkflowID`)
	require.ErrorContains(t, err, `event type "B" has a WorkflowID but no Signal`)
	require.ErrorContains(t, err, `event type "C" names no workflow`)
	require.NotContains(t, err.Error(), `"D"`, "a signal route without Workflow only signals")

	pub := newPublisher(t, nil, temporalpub.Config{Routes: temporalpub.Routes{
		sinkEvent: {Workflow: sinkWorkflow, Signal: sinkSignal, WorkflowID: func(outbox.Event) string { return "" }},
	}})
	require.ErrorIs(t, pub.Publish(context.Background(), stockEvent(t, "x", "")), outbox.ErrPermanent)
}

// TestSignalWhileTemporalIsDown: a signal that cannot reach Temporal is the
// sink's fault, as a start is: no attempt counted.
func TestSignalWhileTemporalIsDown(t *testing.T) {
	t.Parallel()
	port, err := ports.Free()
	require.NoError(t, err)
	c, err := client.NewLazyClient(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", port), Logger: log.NewStructuredLogger(quietLogger())})
	require.NoError(t, err)
	defer c.Close()
	pub := newPublisher(t, c, temporalpub.Config{Routes: temporalpub.Routes{
		sinkEvent: {Workflow: sinkWorkflow, Signal: sinkSignal, WorkflowID: sinkID},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = pub.Publish(ctx, stockEvent(t, uuid.NewString(), ""))
	require.ErrorIs(t, err, outbox.ErrSinkUnavailable)
	require.False(t, errors.Is(err, outbox.ErrPermanent))
	require.Contains(t, err.Error(), "signal "+sinkSignal)
}

// describeID describes the latest run of a workflow ID.
func describeID(t *testing.T, id string) *workflowpb.WorkflowExecutionInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	desc, err := temporal.Client().DescribeWorkflow(ctx, id, "")
	require.NoError(t, err, "workflow %s", id)
	return desc.RawResponse.GetWorkflowExecutionInfo()
}
